// The server's contract as this plugin uses it (docs/lsp.md in the sift repository), and how the
// plugin mirrors each documented method and command. Pure: no `vscode`.

export const SEARCH_METHOD = 'sift/search';
export const CMD_SEARCH = 'sift.search';
export const CMD_REINDEX = 'sift.reindex';
export const CMD_STATUS = 'sift.status';
export const CMD_REVIEW = 'sift.review';

export interface Position {
    line: number;
    character: number;
}

export interface Range {
    start: Position;
    end: Position;
}

export interface SearchParams {
    query: string;
    k?: number;
    mode?: 'lexical' | 'hybrid';
    maxPerFile?: number;
}

export interface SearchResult {
    uri: string;
    path: string;
    range: Range;
    /** 0-based. */
    matchLine: number;
    score: number;
    symbol: string | null;
    kind: string;
    container: string | null;
    language: string;
    snippet: string;
    unsaved: boolean;
}

export type CoverageState = 'indexing' | 'ready' | 'waiting' | 'failed';

export interface Coverage {
    root: string;
    state: CoverageState | string;
    filesDone?: number;
    filesTotal?: number;
    files?: number;
    chunks?: number;
    message?: string;
}

export interface SearchResponse {
    results: SearchResult[];
    mode: string;
    coverage: Coverage[];
}

export interface StatusResponse {
    version: string;
    workspaces: Coverage[];
    positionEncoding: string;
}

export interface ReindexResponse {
    scheduled: number;
}

/**
 * How the plugin mirrors every method and command that docs/lsp.md documents. A unit test reads
 * docs/lsp.md and fails when the server documents a `sift/…` method or `sift.…` command that is
 * not listed here: when the server adds one (agent, memory…), add it here and mirror it (a
 * feature in features.ts for a command the user runs, or a note saying why nothing is needed).
 */
export const MIRRORED: Record<string, string> = {
    'sift/search': 'Sift: Search Codebase (quick pick), and the status bar coverage',
    'sift.search': 'same result as sift/search; the plugin sends the request sift/search instead',
    'sift.reindex': 'Sift: Reindex',
    'sift.status': 'Sift: Show Status, and the status bar item (polled)',
    'sift.review': 'Sift: Review Changes (findings in the Problems panel; older servers without it: the plugin says so)',
    'sift.dismiss': 'code action on a sift diagnostic (vscode-languageclient runs it)',
    'sift.silence': 'code action on a sift diagnostic (vscode-languageclient runs it)',
    'sift.applyFix': 'code action on a sift diagnostic (vscode-languageclient runs it)',
    'sift.embeddings.pause': 'Sift: Pause Embedding',
    'sift.embeddings.resume': 'Sift: Resume Embedding',
    'sift/agent': 'not yet in the extension: the Sift: Ask Agent command and view are being built',
    'sift.agent.apply': 'not yet in the extension (sent by the agent view once it exists)',
    'sift.agent.discard': 'not yet in the extension (sent by the agent view once it exists)',
};

/** The `sift/…` methods and `sift.…` commands named in a Markdown document (docs/lsp.md). */
export function documentedNames(markdown: string): string[] {
    const names = new Set<string>();
    for (const m of markdown.matchAll(/`(sift(?:\/|\.)[A-Za-z][A-Za-z0-9_]*(?:[./][A-Za-z][A-Za-z0-9_]*)*)`/g)) {
        const name = m[1];
        // Test hooks are not part of the contract; `sift.toml`-like file names are not commands.
        if (name.startsWith('sift.test.') || /\.(toml|md|json|lock)$/.test(name)) {
            continue;
        }
        names.add(name);
    }
    return [...names].sort();
}

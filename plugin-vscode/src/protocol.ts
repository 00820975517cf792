// The server's contract as this plugin uses it (docs/lsp.md in the sift repository), and how the
// plugin mirrors each documented method and command. Pure: no `vscode`.

export const SEARCH_METHOD = 'sift/search';
export const STATS_METHOD = 'sift/stats';

/** What `sift/stats` answers (`sift stats --json`); only the fields the plugin shows. */
export interface Decisions {
    shown: number;
    accepted: number;
    edited: number;
    rejected: number;
    undecided: number;
    acceptance: number | null;
}

export interface StatsResponse {
    record: { path: string; bytes: number; events: number; skipped: number };
    stats: {
        events: number;
        agent: Decisions;
        notes: Decisions;
        rules: Record<string, { shown: number; dismissed_wrong: number; dismissed_noise: number; fixed: number; ignored: number; resolution: number | null }>;
        retention: Record<string, { runs: number; mean_percent: number }>;
        automations: Record<string, Decisions>;
        searches: Record<string, number>;
    };
    /** Lessons proposed from accepted runs the user replaced with their own code, as `sift.memory.add`'s arguments. */
    lessons?: StatsLesson[];
}

/** A lesson in `sift/stats`' answer: `sift.memory.add`'s arguments and the run it comes from. */
export interface StatsLesson extends AgentLesson {
    run: string;
}
export const CMD_SEARCH = 'sift.search';
export const CMD_REINDEX = 'sift.reindex';
export const CMD_STATUS = 'sift.status';
export const CMD_REVIEW = 'sift.review';
export const AGENT_METHOD = 'sift/agent';
export const CMD_AGENT_APPLY = 'sift.agent.apply';
export const CMD_AGENT_DISCARD = 'sift.agent.discard';
export const CMD_MEMORY_LIST = 'sift.memory.list';
export const CMD_MEMORY_SHOW = 'sift.memory.show';
export const CMD_MEMORY_ADD = 'sift.memory.add';
export const CMD_MEMORY_VERIFY = 'sift.memory.verify';
export const CMD_MEMORY_DELETE = 'sift.memory.delete';

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

/** A matching chunk: where it is and what it defines (a result's `more` holds only this). */
export interface Chunk {
    range: Range;
    /** 0-based. */
    matchLine: number;
    score: number;
    symbol: string | null;
    kind: string;
    container: string | null;
}

export interface SearchResult extends Chunk {
    uri: string;
    path: string;
    language: string;
    snippet: string;
    unsaved: boolean;
    /** The file's other matching chunks, best first (each result is a file; absent when none). */
    more?: Chunk[];
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

// ---- the agent (docs/lsp.md, "Custom request `sift/agent`") ----------------------------------

/** `sift/agent` params. The progress tokens are added by vscode-languageclient's caller. */
export interface AgentParams {
    task: string;
    /** A workspace folder URI; the server's default is the first folder. */
    root?: string;
    maxSteps?: number;
    /** Best-of-N attempts (default 1). */
    n?: number;
    workDoneToken?: string | number;
    partialResultToken?: string | number;
}

/** One event of a run, as partial results (`$/progress` with the partialResultToken) carry them. */
export type AgentEvent =
    | { kind: 'step'; step: number }
    | { kind: 'tool'; name: string; summary: string }
    | { kind: 'result'; name: string; error: boolean; firstLine: string }
    | { kind: 'compacted' };

/** The value of a partial-result `$/progress`. */
export interface AgentPartial {
    events: AgentEvent[];
}

export type AgentStop = 'done' | 'max_steps' | 'max_tokens' | 'max_duration' | 'cancelled' | 'model_failed';

export interface AgentFile {
    /** Relative to the workspace folder, `/`-separated. */
    path: string;
    uri: string;
    kind: 'modify' | 'create' | 'delete';
    /** What the agent read (null for a created file). */
    original: string | null;
    /** What it proposes (null for a deleted file). */
    proposed: string | null;
}

export interface AgentAttempt {
    index: number;
    score: Record<string, unknown>;
    diff: string;
    answer?: string;
}

export interface AgentResult {
    /** The run id that `sift.agent.apply` and `sift.agent.discard` take. */
    id: string;
    stop: AgentStop | string;
    detail: string;
    answer: string;
    /** The whole change as a unified diff. */
    diff: string;
    files: AgentFile[];
    /** The rules files that applied. */
    rules: string[];
    model: string;
    /** With n > 1: the attempts, best first; the first is the proposed change. */
    attempts?: AgentAttempt[] | null;
    /** Memory notes the agent proposed (`remember`); none is written until the user accepts one. */
    notes?: ProposedNote[] | null;
    /** What was replaced before the model's endpoint saw it (a remote endpoint only). */
    redactions?: Redaction[] | null;
}

/** A secret-looking string replaced before a message left the machine. */
export interface Redaction {
    /** What it looked like: `api key`, `private key`, `password`… */
    kind: string;
    /** Its line in the message (1-based). */
    line: number;
    /** Its first characters and length, never the whole secret. */
    preview: string;
}

/** A note the agent proposed: what `sift.memory.add` takes back, with a `uri` of the workspace. */
export interface ProposedNote {
    title: string;
    text: string;
    /** Citation specs: `PATH#SYMBOL`, `PATH:LINES` or `PATH`. */
    cite: string[];
    author: 'agent' | string;
}

/** The answer to `sift.agent.apply`. */
export interface AgentApplyResult {
    applied: boolean;
    failureReason?: string;
}

/** `sift.agent.discard` arguments: the run, and why the user refused it (absent: no reason). */
export interface AgentDiscardArgs {
    id: string;
    reason?: string;
}

/**
 * A lesson from a refused run: a memory note citing the code the change would have rewritten,
 * exactly the argument object of `sift.memory.add` (sent only when the user keeps it).
 */
export interface AgentLesson {
    /** The file (in the run's workspace folder) the note is written for. */
    uri: string;
    /** Citation specs, `PATH:LINES` of the code as it is. */
    cite: string[];
    text: string;
    /** `Refused: <reason>` (a discard), `Replaced: …` (`sift/stats`). */
    title: string;
}

/** The answer to `sift.agent.discard`. */
export interface AgentDiscardResult {
    /** Whether the server still had the run. */
    discarded: boolean;
    /** With a reason, when the change modified an existing file: the proposed lesson. */
    lesson?: AgentLesson;
}

// ---- memory notes (docs/lsp.md, "Memory notes" and the sift.memory.* commands) ----------------

/** A note's state: `moved` is fresh (its code is elsewhere); `unchecked` before the first check. */
export type NoteState = 'fresh' | 'moved' | 'stale' | 'unchecked';

export interface NoteCitation {
    /** `path#symbol` or `path:lines`. */
    label: string;
    path: string;
    lines: string | null;
    symbol: string | null;
    hash: string | null;
    status: 'fresh' | 'moved' | 'changed' | 'lost' | null;
    /** Where the cited code is now (`path:lines`), when it moved. */
    now: string | null;
    /** Why the citation is not fresh. */
    reason: string | null;
}

/** One note as `sift.memory.list` and `sift.memory.show` answer it (`to_json` of the engine). */
export interface MemoryNote {
    /** The workspace folder (a file system path). */
    root?: string;
    slug: string;
    /** The note's file, `.sift/memory/<slug>.md` (a file system path). */
    path?: string | null;
    title: string;
    state: NoteState | string;
    /** Why the note is stale. */
    stale: string | null;
    scope: string[];
    author: string;
    origin: string | null;
    created: string;
    updated: string;
    citations: NoteCitation[];
    text: string;
}

export interface MemoryListResponse {
    notes: MemoryNote[];
}

/** `sift.memory.add` arguments: a selection of a document, or given citations (a proposed note). */
export type MemoryAddArgs =
    | { uri: string; range?: Range; text: string; title?: string }
    | { uri: string; cite: string[]; text: string; title?: string; author?: string };

export interface MemoryAddResult {
    slug: string;
    path: string;
    cites: string[];
}

/**
 * How the plugin mirrors every method and command that docs/lsp.md documents. A unit test reads
 * docs/lsp.md and fails when the server documents a `sift/…` method or `sift.…` command that is
 * not listed here: when the server adds one (agent, memory…), add it here and mirror it (a
 * feature in features.ts for a command the user runs, or a note saying why nothing is needed).
 */
export const MIRRORED: Record<string, string> = {
    'sift/search': 'Sift: Search Codebase (quick pick), and the status bar coverage',
    'sift/stats': 'Sift: Show Stats (the figures of the last 30 days in the Sift output channel)',
    'sift.search': 'same result as sift/search; the plugin sends the request sift/search instead',
    'sift.reindex': 'Sift: Reindex',
    'sift.status': 'Sift: Show Status, and the status bar item (polled)',
    'sift.review': 'Sift: Review Changes (findings in the Problems panel; older servers without it: the plugin says so)',
    'sift.dismiss': 'code action on a sift diagnostic (vscode-languageclient runs it)',
    'sift.silence': 'code action on a sift diagnostic (vscode-languageclient runs it)',
    'sift.applyFix': 'code action on a sift diagnostic (vscode-languageclient runs it)',
    'sift.embeddings.pause': 'Sift: Pause Embedding',
    'sift.embeddings.resume': 'Sift: Resume Embedding',
    'sift/agent': 'Sift: Ask Agent (progress notification, steps and proposed files in the Sift Agent view, diffs in the diff editor)',
    'sift.agent.apply': 'Accept in the Sift Agent view or the notification (the server sends workspace/applyEdit; VS Code asks for confirmation)',
    'sift.agent.discard':
        'Reject in the Sift Agent view or the notification, then an optional reason (input box); a lesson in the answer is offered as a memory note (Keep). Without a reason when a new run replaces a proposal',
    'sift.memory.list': 'the Sift Memory view (fresh notes first, stale ones flagged with the reason); hover and code lens work through vscode-languageclient',
    'sift.memory.show': 'the code lens command: the extension intercepts it (middleware), runs it and opens the note (several: a quick pick)',
    'sift.memory.add': 'Sift: Remember Selection (editor context menu, view title), Remember on a note the agent proposed in the Sift Agent view (after a modal confirmation), and Keep on the lesson of a run rejected with a reason',
    'sift.memory.verify': 'Verify on a note of the Sift Memory view',
    'sift.memory.delete': 'Delete on a note of the Sift Memory view (after a modal confirmation)',
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

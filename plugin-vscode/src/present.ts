// How search results and index coverage are shown: quick pick rows, the status bar text, the
// status report. Pure (no `vscode`), so it is unit-tested.

import type { Coverage, SearchParams, SearchResult, StatsResponse, StatusResponse } from './protocol';

export interface SearchSettings {
    maxResults: number;
    mode: 'lexical' | 'hybrid';
    maxPerFile: number | null;
}

/** The `sift/search` params for what the user typed, or undefined when there is nothing to ask. */
export function searchParams(query: string, settings: SearchSettings): SearchParams | undefined {
    const q = query.trim();
    // The server ignores punctuation; a query without a letter or digit finds nothing.
    if (!/[\p{L}\p{N}_]/u.test(q)) {
        return undefined;
    }
    const k = Math.max(1, Math.min(200, Math.floor(settings.maxResults || 50)));
    const params: SearchParams = { query: q, k, mode: settings.mode };
    if (settings.maxPerFile !== null && settings.maxPerFile > 0) {
        params.maxPerFile = Math.floor(settings.maxPerFile);
    }
    return params;
}

const KIND_ICONS: Record<string, string> = {
    function: 'symbol-function',
    method: 'symbol-method',
    class: 'symbol-class',
    struct: 'symbol-struct',
    enum: 'symbol-enum',
    union: 'symbol-struct',
    trait: 'symbol-interface',
    interface: 'symbol-interface',
    impl: 'symbol-class',
    module: 'symbol-module',
    type: 'symbol-type-parameter',
    macro: 'symbol-constant',
    'top-level': 'symbol-file',
    body: 'symbol-file',
    lines: 'file-text',
};

/** The codicon for a chunk kind. */
export function kindIcon(kind: string): string {
    return KIND_ICONS[kind] ?? 'symbol-misc';
}

export interface ResultRow {
    label: string;
    description: string;
    detail: string;
}

function basename(p: string): string {
    const i = p.lastIndexOf('/');
    return i >= 0 ? p.slice(i + 1) : p;
}

/** Collapses a snippet to one line for the quick pick. */
export function oneLine(snippet: string, max = 160): string {
    const text = snippet
        .split('\n')
        .map((l) => l.trim())
        .filter((l) => l.length > 0)
        .join('  ⏎  ');
    return text.length > max ? text.slice(0, max - 1) + '…' : text;
}

/** One quick pick row for a result. */
export function resultRow(r: SearchResult): ResultRow {
    const line = r.matchLine + 1;
    const name = r.symbol ? (r.container ? `${r.container}::${r.symbol}` : r.symbol) : `${basename(r.path)}:${line}`;
    const others = r.more?.length ?? 0;
    const more = others > 0 ? ` · +${others} more in this file` : '';
    const description = `${r.path}:${line}${r.unsaved ? ' (unsaved)' : ''}${more}`;
    return { label: `$(${kindIcon(r.kind)}) ${name}`, description, detail: oneLine(r.snippet) };
}

/** Where to put the cursor and what to reveal when a result is opened (0-based lines). */
export function openTarget(r: SearchResult): { line: number; revealStart: number; revealEnd: number } {
    const start = r.range.start.line;
    // `end` is column 0 of the line after the chunk.
    const end = Math.max(start, r.range.end.character === 0 ? r.range.end.line - 1 : r.range.end.line);
    const line = Math.min(Math.max(r.matchLine, start), end);
    return { line, revealStart: start, revealEnd: end };
}

function rootName(root: string): string {
    const trimmed = root.replace(/[\\/]+$/, '');
    const i = Math.max(trimmed.lastIndexOf('/'), trimmed.lastIndexOf('\\'));
    return i >= 0 ? trimmed.slice(i + 1) : trimmed;
}

function percent(c: Coverage): number | undefined {
    if (typeof c.filesTotal === 'number' && c.filesTotal > 0 && typeof c.filesDone === 'number') {
        return Math.min(100, Math.floor((100 * c.filesDone) / c.filesTotal));
    }
    return undefined;
}

/** One line per workspace, for tooltips and the status report. */
export function coverageLine(c: Coverage): string {
    const name = rootName(c.root);
    const counts =
        typeof c.files === 'number' ? `${c.files} files, ${c.chunks ?? 0} chunks` : 'no index yet';
    switch (c.state) {
        case 'ready':
            return `${name}: ready (${counts})`;
        case 'indexing': {
            const p = percent(c);
            const progress =
                p === undefined ? 'starting' : `${p}% (${c.filesDone}/${c.filesTotal} files)`;
            return `${name}: indexing ${progress}; searchable now: ${counts}`;
        }
        case 'waiting':
            return `${name}: another sift process indexes it; reading what it commits (${counts})`;
        case 'failed':
            return `${name}: indexing failed${c.message ? `: ${c.message}` : ''}`;
        default:
            return `${name}: ${c.state} (${counts})`;
    }
}

export interface StatusBarView {
    text: string;
    tooltip: string;
    /** `error` and `warning` colour the item. */
    severity: 'ok' | 'busy' | 'warning' | 'error';
}

/** The status bar item for the state of every workspace's index. */
export function statusBar(coverage: Coverage[]): StatusBarView {
    if (coverage.length === 0) {
        return { text: '$(search) sift', tooltip: 'sift: no workspace folder is indexed', severity: 'ok' };
    }
    const tooltip = ['sift: ' + (coverage.length > 1 ? `${coverage.length} workspaces` : 'index'), ...coverage.map(coverageLine)].join('\n');
    const failed = coverage.filter((c) => c.state === 'failed');
    if (failed.length > 0) {
        return { text: '$(error) sift: index failed', tooltip, severity: 'error' };
    }
    const indexing = coverage.filter((c) => c.state === 'indexing');
    if (indexing.length > 0) {
        let done = 0;
        let total = 0;
        for (const c of indexing) {
            done += c.filesDone ?? 0;
            total += c.filesTotal ?? 0;
        }
        const p = total > 0 ? `${Math.min(100, Math.floor((100 * done) / total))}%` : '…';
        return { text: `$(sync~spin) sift: indexing ${p}`, tooltip, severity: 'busy' };
    }
    const files = coverage.reduce((n, c) => n + (c.files ?? 0), 0);
    const waiting = coverage.some((c) => c.state === 'waiting');
    return {
        text: `$(${waiting ? 'eye' : 'check'}) sift: ${files.toLocaleString('en-US')} files`,
        tooltip,
        severity: 'ok',
    };
}

/** Whether any workspace is still changing (poll faster then). */
export function isBusy(coverage: Coverage[]): boolean {
    return coverage.some((c) => c.state === 'indexing' || c.state === 'waiting');
}

/** The text of "Sift: Show Status". */
export function statusReport(status: StatusResponse, serverPath: string): string {
    const lines = [
        `sift ${status.version} (${serverPath}), position encoding ${status.positionEncoding}`,
        ...(status.workspaces.length > 0 ? status.workspaces.map(coverageLine) : ['no workspace folder is indexed']),
    ];
    return lines.join('\n');
}

/** A search's title line: how complete the index it answered from is. */
export function coverageNote(coverage: Coverage[]): string | undefined {
    const incomplete = coverage.filter((c) => c.state !== 'ready');
    if (incomplete.length === 0) {
        return undefined;
    }
    return incomplete.map(coverageLine).join('; ');
}

/** The figures of `sift/stats` as lines for the output channel (what `sift stats` prints, shorter). */
export function statsReport(r: StatsResponse): string {
    const pct = (x: number | null) => (x === null ? '-' : `${Math.round(x * 100)} %`);
    const s = r.stats;
    const lines = [`sift stats: ${s.events} record(s) in the period`];
    const a = s.agent;
    lines.push(`agent runs: ${a.shown} shown, ${a.accepted} taken, ${a.edited} edited, ${a.rejected} refused, ${a.undecided} undecided (${pct(a.acceptance)} taken)`);
    for (const [label, k] of Object.entries(s.retention)) {
        lines.push(`  code kept at ${label}: ${Math.round(k.mean_percent)} % (${k.runs} run${k.runs === 1 ? '' : 's'})`);
    }
    for (const [rule, f] of Object.entries(s.rules)) {
        lines.push(`rule ${rule}: ${f.shown} shown, ${f.dismissed_wrong + f.dismissed_noise} dismissed, ${f.fixed} fixed, ${f.ignored} merged untouched (resolved ${pct(f.resolution)})`);
    }
    for (const [job, d] of Object.entries(s.automations)) {
        lines.push(`automation ${job}: ${d.shown} delivered, ${d.accepted + d.edited} taken (${pct(d.acceptance)})`);
    }
    const searches = Object.values(s.searches).reduce((x, y) => x + y, 0);
    lines.push(`search lists shown: ${searches}`);
    for (const lesson of r.lessons ?? []) {
        lines.push(`lesson proposed from run ${lesson.run} (its change was replaced by your own code): ${lesson.cite.join(', ')}`);
    }
    lines.push(`the record: ${r.record.path} (${r.record.bytes} bytes, on this machine only)`);
    return lines.join('\n');
}

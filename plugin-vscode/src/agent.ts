// The agent's front end without `vscode`: what `sift/agent` is sent, how a run's events and its
// result become the rows of the Sift Agent view, the virtual documents of its diffs, and the
// messages. All the agent's logic is in the server (docs/lsp.md, `sift/agent`); this module only
// presents what the server sends. Pure, so it is unit-tested.

import type { AgentApplyResult, AgentDiscardArgs, AgentEvent, AgentFile, AgentParams, AgentResult } from './protocol';

/** What the user asked for and how. */
export interface AgentRequest {
    task: string;
    /** A workspace folder URI (the server's default: the first folder). */
    root?: string;
    n?: number;
    maxSteps?: number;
}

/** The `sift/agent` params for a request, or undefined when the task is blank. */
export function agentParams(request: AgentRequest): AgentParams | undefined {
    const task = request.task.trim();
    if (task === '') {
        return undefined;
    }
    const params: AgentParams = { task };
    if (request.root) {
        params.root = request.root;
    }
    if (typeof request.n === 'number' && request.n > 1) {
        params.n = Math.min(8, Math.floor(request.n));
    }
    if (typeof request.maxSteps === 'number' && request.maxSteps > 0) {
        params.maxSteps = Math.floor(request.maxSteps);
    }
    return params;
}

/** Where a run stands. */
export type RunState = 'running' | 'proposed' | 'unchanged' | 'failed' | 'applied' | 'discarded';

/** A row of the view, as plain data (agentView.ts turns it into a vscode.TreeItem). */
export interface Row {
    /** Stable within a run (tree items keep their expansion state by id). */
    id: string;
    label: string;
    description?: string;
    tooltip?: string;
    /** A codicon name. */
    icon: string;
    /** An icon colour (a theme colour id). */
    color?: string;
    expanded?: boolean;
    /** `file` rows open the diff; the view's item menus match on it. */
    contextValue?: 'file' | 'task' | 'answer' | 'attempt' | 'proposedNote' | 'rememberedNote';
    /** For `file` rows: the file's path in the result. */
    path?: string;
    /** For `attempt` rows: the attempt's index. */
    attempt?: number;
    /** For `proposedNote` rows: the note's index in the result's `notes`. */
    note?: number;
    children?: Row[];
}

interface ToolCall {
    name: string;
    summary: string;
    result?: { error: boolean; firstLine: string };
}

interface Step {
    step: number;
    calls: ToolCall[];
    compacted: boolean;
}

const TOOL_ICONS: Record<string, string> = {
    search: 'search',
    grep: 'regex',
    read: 'file',
    outline: 'symbol-class',
    list: 'list-tree',
    history: 'history',
    edit: 'edit',
    create: 'new-file',
    delete: 'trash',
    check: 'checklist',
    review: 'eye',
};

/** The codicon for a tool. */
export function toolIcon(name: string): string {
    return TOOL_ICONS[name] ?? 'tools';
}

/** Cuts a line to `max` characters, with an ellipsis. */
export function clip(text: string, max = 80): string {
    const line = text.split('\n')[0];
    return line.length > max ? `${line.slice(0, max - 1)}…` : line;
}

/** One run: the task, the events as they arrive, then the result. */
export class AgentRun {
    readonly steps: Step[] = [];
    state: RunState = 'running';
    result: AgentResult | undefined;
    /** Why the run failed (an error answered to the request), or why apply failed. */
    error: string | undefined;
    /** The latest work-done progress message. */
    progressMessage: string | undefined;
    /** The workspace folder URI the run was sent for (proposed notes are written there). */
    root: string | undefined;
    /** The proposed notes (indexes into the result's `notes`) the user had written. */
    readonly remembered = new Set<number>();

    constructor(
        readonly key: number,
        readonly request: AgentRequest,
    ) {}

    /** Adds partial-result events. */
    add(events: AgentEvent[]): void {
        for (const e of events) {
            switch (e.kind) {
                case 'step':
                    this.steps.push({ step: e.step, calls: [], compacted: false });
                    break;
                case 'tool':
                    this.current().calls.push({ name: e.name, summary: e.summary });
                    break;
                case 'result': {
                    const calls = this.current().calls;
                    const call = [...calls].reverse().find((c) => c.name === e.name && c.result === undefined);
                    if (call) {
                        call.result = { error: e.error, firstLine: e.firstLine };
                    } else {
                        calls.push({ name: e.name, summary: '', result: { error: e.error, firstLine: e.firstLine } });
                    }
                    break;
                }
                case 'compacted':
                    this.current().compacted = true;
                    break;
            }
        }
    }

    private current(): Step {
        if (this.steps.length === 0) {
            this.steps.push({ step: 1, calls: [], compacted: false });
        }
        return this.steps[this.steps.length - 1];
    }

    /** The last line worth showing while the run goes on (`step 3: edit path=…`). */
    lastLine(): string | undefined {
        if (this.progressMessage) {
            return this.progressMessage;
        }
        const step = this.steps[this.steps.length - 1];
        if (step === undefined) {
            return undefined;
        }
        const call = step.calls[step.calls.length - 1];
        return call ? `step ${step.step}: ${call.name}${call.summary ? ` ${call.summary}` : ''}` : `step ${step.step}`;
    }

    finish(result: AgentResult): void {
        this.result = result;
        this.state = result.files.length > 0 ? 'proposed' : 'unchanged';
    }

    fail(message: string): void {
        this.error = message;
        this.state = 'failed';
    }

    file(path: string): AgentFile | undefined {
        return this.result?.files.find((f) => f.path === path);
    }

    /** The view's rows for this run. */
    rows(): Row[] {
        const k = `run${this.key}`;
        const rows: Row[] = [
            {
                id: `${k}/task`,
                // What matters first (the sidebar is narrow): where the run stands, then the task.
                label: this.stateText(),
                description: clip(this.request.task, 60),
                tooltip: this.request.task + (this.result ? `\n\n${this.result.detail} (${this.result.model})` : ''),
                icon: STATE_ICONS[this.state],
                color: this.state === 'failed' ? 'errorForeground' : undefined,
                contextValue: 'task',
            },
        ];
        if (this.error && this.error !== 'cancelled') {
            rows.push({ id: `${k}/error`, label: clip(this.error, 100), tooltip: this.error, icon: 'error', color: 'errorForeground' });
        }
        for (const [i, step] of this.steps.entries()) {
            const last = i === this.steps.length - 1;
            rows.push({
                // The id changes while a step grows, so VS Code takes its expansion afresh
                // (a row first shown without children would stay folded).
                id: `${k}/step${i}/${step.calls.length}`,
                label: `Step ${step.step}`,
                description:
                    (step.calls.length > 0 ? step.calls.map((c) => c.name).join(', ') : this.answeredIn(i) ? 'answered' : this.state === 'running' && last ? '' : 'stopped') +
                    (step.compacted ? ' (conversation compacted)' : ''),
                icon: step.calls.length > 0 ? 'debug-stackframe-dot' : this.answeredIn(i) ? 'comment' : 'circle-outline',
                // The latest steps and any with a failed call are open; older ones fold away.
                expanded: i >= this.steps.length - 3 || step.calls.some((c) => c.result?.error),
                children: step.calls.map((call, j) => ({
                    id: `${k}/step${i}/${step.calls.length}/call${j}`,
                    label: `${call.name}${call.summary ? ` ${clip(call.summary, 70)}` : ''}`,
                    description: call.result ? clip(call.result.firstLine, 80) : this.state === 'running' && last ? '…' : undefined,
                    tooltip: [call.name, call.summary, call.result?.firstLine].filter(Boolean).join('\n'),
                    icon: call.result?.error ? 'error' : toolIcon(call.name),
                    color: call.result?.error ? 'errorForeground' : undefined,
                })),
            });
        }
        const result = this.result;
        if (result === undefined) {
            return rows;
        }
        if (result.answer.trim()) {
            rows.push({
                id: `${k}/answer`,
                label: clip(result.answer.trim(), 90),
                tooltip: result.answer.trim(),
                icon: 'comment',
                contextValue: 'answer',
            });
        }
        if (result.files.length > 0) {
            rows.push({
                id: `${k}/files`,
                label: this.state === 'applied' ? 'Applied change' : this.state === 'discarded' ? 'Rejected change' : 'Proposed change',
                description: `${result.files.length} file${result.files.length === 1 ? '' : 's'}`,
                icon: 'diff',
                expanded: true,
                children: result.files.map((f) => ({
                    id: `${k}/file/${f.path}`,
                    label: basename(f.path),
                    description: `${dirname(f.path)}${dirname(f.path) ? ' · ' : ''}${KIND_WORDS[f.kind]} ${lineDelta(f)}`.trim(),
                    tooltip: `${f.path} (${KIND_WORDS[f.kind]}): click to see the diff`,
                    icon: FILE_ICONS[f.kind],
                    contextValue: 'file',
                    path: f.path,
                })),
            });
        }
        const notes = result.notes ?? [];
        if (notes.length > 0) {
            const left = notes.length - this.remembered.size;
            rows.push({
                id: `${k}/notes`,
                label: 'Proposed memory notes',
                description: `${notes.length}${left < notes.length ? `, ${notes.length - left} remembered` : ''}`,
                tooltip: 'Notes the agent would keep in .sift/memory/: none is written unless you choose Remember.',
                icon: 'book',
                expanded: true,
                children: notes.map((n, i) => {
                    const done = this.remembered.has(i);
                    return {
                        id: `${k}/note${i}`,
                        label: clip(n.title, 70),
                        description: done ? 'remembered' : n.cite.length > 0 ? n.cite.join(', ') : 'no citation',
                        tooltip: `${n.title}\n\n${n.text}${n.cite.length > 0 ? `\n\ncites ${n.cite.join(', ')}` : ''}`,
                        icon: done ? 'check' : 'lightbulb',
                        contextValue: done ? ('rememberedNote' as const) : ('proposedNote' as const),
                        note: i,
                    };
                }),
            });
        }
        const redactions = result.redactions ?? [];
        if (redactions.length > 0) {
            rows.push({
                id: `${k}/redactions`,
                label: 'Redacted before sending',
                description: `${redactions.length} secret-looking string${redactions.length === 1 ? '' : 's'}`,
                tooltip: `Replaced by [REDACTED:…] before the messages went to ${result.model}.`,
                icon: 'shield',
                children: redactions.map((r, i) => ({
                    id: `${k}/redaction${i}`,
                    label: r.kind,
                    description: `line ${r.line}: ${r.preview}`,
                    icon: 'eye-closed',
                })),
            });
        }
        if (result.rules.length > 0) {
            rows.push({
                id: `${k}/rules`,
                label: 'Rules applied',
                description: result.rules.join(', '),
                tooltip: result.rules.join('\n'),
                icon: 'law',
            });
        }
        if (result.attempts && result.attempts.length > 1) {
            rows.push({
                id: `${k}/attempts`,
                label: 'Attempts, best first',
                description: `${result.attempts.length}`,
                icon: 'layers',
                children: result.attempts.map((a, rank) => ({
                    id: `${k}/attempt${a.index}`,
                    label: `attempt ${a.index + 1}${rank === 0 ? ' (proposed)' : ''}`,
                    description: scoreText(a.score),
                    tooltip: JSON.stringify(a.score, null, 2),
                    icon: rank === 0 ? 'star-full' : 'circle-outline',
                    contextValue: 'attempt',
                    attempt: a.index,
                })),
            });
        }
        return rows;
    }

    /** Whether step `i` is the one in which the model gave its final answer. */
    private answeredIn(i: number): boolean {
        return this.result !== undefined && i === this.steps.length - 1 && this.steps[i].calls.length === 0;
    }

    stateText(): string {
        switch (this.state) {
            case 'running': {
                const line = this.lastLine();
                return line ? `Running · ${line}` : 'Running…';
            }
            case 'proposed':
                return `${capital(stopWord(this.result!))} · ${this.result!.files.length} file${this.result!.files.length === 1 ? '' : 's'} to review`;
            case 'unchanged':
                return `${capital(stopWord(this.result!))} · no change`;
            case 'failed':
                return this.error === 'cancelled' ? 'Cancelled' : 'Failed';
            case 'applied':
                return 'Applied in the editor';
            case 'discarded':
                return 'Rejected';
        }
    }
}

const STATE_ICONS: Record<RunState, string> = {
    running: 'loading~spin',
    proposed: 'git-pull-request',
    unchanged: 'pass',
    failed: 'error',
    applied: 'check',
    discarded: 'close',
};

const KIND_WORDS: Record<AgentFile['kind'], string> = { modify: 'modified', create: 'new', delete: 'deleted' };
const FILE_ICONS: Record<AgentFile['kind'], string> = { modify: 'diff-modified', create: 'diff-added', delete: 'diff-removed' };

function capital(s: string): string {
    return s.charAt(0).toUpperCase() + s.slice(1);
}

function basename(p: string): string {
    const i = p.lastIndexOf('/');
    return i >= 0 ? p.slice(i + 1) : p;
}

function dirname(p: string): string {
    const i = p.lastIndexOf('/');
    return i >= 0 ? p.slice(0, i) : '';
}

function lines(text: string | null): string[] {
    if (text === null || text === '') {
        return [];
    }
    return text.replace(/\n$/, '').split('\n');
}

/** `+3 −1`: lines added and removed (a multiset comparison, good enough for a label). */
export function lineDelta(file: AgentFile): string {
    const before = new Map<string, number>();
    for (const l of lines(file.original)) {
        before.set(l, (before.get(l) ?? 0) + 1);
    }
    let added = 0;
    for (const l of lines(file.proposed)) {
        const n = before.get(l) ?? 0;
        if (n > 0) {
            before.set(l, n - 1);
        } else {
            added++;
        }
    }
    let removed = 0;
    for (const n of before.values()) {
        removed += n;
    }
    return `+${added} −${removed}`;
}

/** A short word for how a run ended. */
export function stopWord(result: Pick<AgentResult, 'stop'>): string {
    switch (result.stop) {
        case 'done':
            return 'done';
        case 'max_steps':
            return 'stopped at the step limit';
        case 'max_tokens':
            return 'stopped at the token budget';
        case 'max_duration':
            return 'stopped at the time limit';
        case 'cancelled':
            return 'cancelled';
        case 'model_failed':
            return 'the model failed';
        default:
            return String(result.stop);
    }
}

/** A best-of-N score in a few words (the server's fields, whatever they are). */
export function scoreText(score: Record<string, unknown>): string {
    return Object.entries(score)
        .filter(([, v]) => typeof v === 'number' || typeof v === 'boolean' || typeof v === 'string')
        .slice(0, 5)
        .map(([k, v]) => `${k.replace(/_/g, ' ')} ${String(v)}`)
        .join(', ');
}

/** The message shown when a run ends, and the buttons it offers. */
export function finishedMessage(result: AgentResult): { text: string; severity: 'info' | 'warning'; buttons: string[] } {
    const n = result.files.length;
    const files = n === 0 ? 'no file changed' : `${n} file${n === 1 ? '' : 's'} changed (${result.files.slice(0, 3).map((f) => f.path).join(', ')}${n > 3 ? ', …' : ''})`;
    const ok = result.stop === 'done';
    const text = `sift agent: ${stopWord(result)}, ${files}.${ok ? '' : ` ${result.detail}`}`.trim();
    const buttons = n > 0 ? ['Review Diff', 'Accept', 'Reject'] : ['Retry'];
    return { text, severity: ok ? 'info' : 'warning', buttons };
}

/** The message after `sift.agent.apply`. */
export function appliedMessage(answer: AgentApplyResult | null | undefined): { ok: boolean; text: string } {
    if (answer?.applied) {
        return { ok: true, text: 'sift agent: the change is applied in the editor; save the files it left unsaved.' };
    }
    const why = answer?.failureReason ?? 'the editor did not apply the change';
    return { ok: false, text: `sift agent: not applied: ${why}` };
}

/**
 * The input box that Reject opens once the run is discarded and its diffs are closed: the
 * reason is optional, and Escape, an empty answer or clicking elsewhere rejects without one.
 */
export const REJECT_REASON_INPUT = {
    title: 'Sift: Reject Agent Change: why? (optional)',
    prompt: 'Rejected. Why? sift records the reason and may propose a lesson for later runs. Optional: Enter with nothing, or Escape, rejects without a reason.',
    placeHolder: 'Optional, e.g. the accounting import reads exactly five digits',
} as const;

/**
 * `sift.agent.discard`'s argument for run `id` refused for `reason`: the reason trimmed, and
 * left out when there is none (Escape, an empty or blank answer, or a discard the user did not
 * ask for: a new run replacing a proposal).
 */
export function discardArgs(id: string, reason?: string | null): AgentDiscardArgs {
    const why = typeof reason === 'string' ? reason.trim() : '';
    return why === '' ? { id } : { id, reason: why };
}

/** The URI scheme of the diff editor's two sides. */
export const DOC_SCHEME = 'sift-agent';

/** The path part of a side's URI: `/KEY/original/PATH` or `/KEY/proposed/PATH` (the file's own name last, so the editor shows it and picks the language). */
export function docPath(key: number, side: 'original' | 'proposed', path: string): string {
    return `/${key}/${side}/${path}`;
}

/** The path of an attempt's diff (best-of-N): `/attempt/KEY/INDEX.diff`. */
export function attemptPath(key: number, index: number): string {
    return `/attempt/${key}/${index}.diff`;
}

/** Reads an attempt's diff path back. */
export function parseAttemptPath(p: string): { key: number; index: number } | undefined {
    const m = p.match(/^\/attempt\/(\d+)\/(\d+)\.diff$/);
    return m ? { key: Number(m[1]), index: Number(m[2]) } : undefined;
}

/** Reads a side's URI path back. */
export function parseDocPath(p: string): { key: number; side: 'original' | 'proposed'; path: string } | undefined {
    const m = p.match(/^\/(\d+)\/(original|proposed)\/(.+)$/);
    return m ? { key: Number(m[1]), side: m[2] as 'original' | 'proposed', path: m[3] } : undefined;
}

/** The diff editor's title. */
export function diffTitle(file: AgentFile): string {
    const what = file.kind === 'create' ? 'new file' : file.kind === 'delete' ? 'deleted' : 'original ↔ proposed';
    return `${basename(file.path)} (sift agent: ${what})`;
}

/** The text of a side (a created file has no original; a deleted one no proposal). */
export function sideText(file: AgentFile, side: 'original' | 'proposed'): string {
    return (side === 'original' ? file.original : file.proposed) ?? '';
}

/** What an error answered to `sift/agent` means to the user. */
export function failureText(error: unknown): { cancelled: boolean; text: string } {
    const e = (typeof error === 'object' && error !== null ? error : {}) as { code?: unknown; message?: unknown };
    const message = typeof e.message === 'string' ? e.message : String(error);
    // -32800 RequestCancelled; -32801 ContentModified.
    if (e.code === -32800) {
        return { cancelled: true, text: 'cancelled' };
    }
    if (e.code === -32601 || /unhandled method|method not found/i.test(message)) {
        return { cancelled: false, text: 'your sift server has no agent yet (sift/agent); update sift' };
    }
    return { cancelled: false, text: message };
}

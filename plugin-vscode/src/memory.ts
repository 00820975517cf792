// Memory notes without `vscode`: how the notes that `sift.memory.list` answers become the rows
// of the Sift Memory view (fresh first, stale ones flagged with the reason), the arguments sent
// to `sift.memory.add` (a selection, or a note the agent proposed), and the messages. The notes,
// their states and the citations are all the server's (docs/lsp.md, `sift.memory.*`); this
// module only presents them. Pure, so it is unit-tested.

import { isUnknownCommand } from './features';
import type { AgentLesson, MemoryAddArgs, MemoryAddResult, MemoryNote, NoteCitation, ProposedNote, Range } from './protocol';

/** A row of the Sift Memory view, as plain data (memoryView.ts makes a vscode.TreeItem of it). */
export interface MemoryRow {
    id: string;
    label: string;
    description?: string;
    tooltip?: string;
    /** A codicon name. */
    icon: string;
    /** An icon colour (a theme colour id). */
    color?: string;
    /** `note` and `stale-note` rows open the note's file; the view's item menus match on it. */
    contextValue: 'note' | 'stale-note' | 'citation';
    /** The note (for note and citation rows). */
    slug: string;
    /** The note's file, to open. */
    file?: string;
    /** For citation rows: the cited file (relative to `root`) and its 1-based first line. */
    target?: { root: string; path: string; line: number };
    children?: MemoryRow[];
}

/** Whether a note is stale: a citation's code changed or cannot be found. `moved` is fresh. */
export function isStale(note: Pick<MemoryNote, 'state'>): boolean {
    return note.state === 'stale';
}

/** The notes in the view's order: fresh (and moved, unchecked) ones first, stale ones below; by title within each. */
export function sortNotes(notes: MemoryNote[]): MemoryNote[] {
    return [...notes].sort((a, b) => Number(isStale(a)) - Number(isStale(b)) || a.title.localeCompare(b.title) || a.slug.localeCompare(b.slug));
}

/** The note's file: the server's `path`, else `<root>/.sift/memory/<slug>.md`. */
export function noteFile(note: Pick<MemoryNote, 'path' | 'root' | 'slug'>): string | undefined {
    if (note.path) {
        return note.path;
    }
    return note.root ? `${note.root.replace(/\/$/, '')}/.sift/memory/${note.slug}.md` : undefined;
}

/** The state in a few words: `fresh`, `moved`, `stale: <reason>`. */
export function stateText(note: Pick<MemoryNote, 'state' | 'stale'>): string {
    if (isStale(note)) {
        return `stale: ${note.stale ?? 'the cited code changed'}`;
    }
    return note.state;
}

const STATE_ICONS: Record<string, string> = { fresh: 'note', moved: 'arrow-swap', stale: 'warning', unchecked: 'question' };

/** The first line of a citation's `lines` (`"12-30"` → 12), or 1. */
export function firstLine(lines: string | null | undefined): number {
    const n = Number.parseInt((lines ?? '').split('-')[0], 10);
    return Number.isFinite(n) && n >= 1 ? n : 1;
}

/** Where a citation's code is to be looked at: where it is now when it moved, else where the note says. */
export function citationTarget(c: NoteCitation): { path: string; line: number } {
    const now = c.now?.match(/^(.*):(\d+)(?:-\d+)?$/);
    if (now) {
        return { path: now[1], line: Number(now[2]) };
    }
    return { path: c.path, line: firstLine(c.lines) };
}

function citationText(c: NoteCitation): string {
    const status = c.status ?? 'unchecked';
    return `${status}${c.now && c.status === 'moved' ? ` (now ${c.now})` : ''}${c.reason ? `: ${c.reason}` : ''}`;
}

/** The tooltip of a note: title, state, citations, text, name, author, date. */
export function noteTooltip(note: MemoryNote): string {
    const lines = [note.title, `${stateText(note)}`, ''];
    for (const c of note.citations) {
        lines.push(`cites ${c.label} (${citationText(c)})`);
    }
    if (note.citations.length > 0) {
        lines.push('');
    }
    lines.push(note.text.trim(), '', `${note.slug} · ${note.author} · ${note.updated}${note.origin ? ` · ${note.origin}` : ''}`);
    return lines.join('\n');
}

/** The view's rows: one per note (its citations as children), fresh first, stale flagged. */
export function noteRows(notes: MemoryNote[]): MemoryRow[] {
    return sortNotes(notes).map((note) => {
        const stale = isStale(note);
        const key = `${note.root ?? ''}/${note.slug}`;
        return {
            id: `note/${key}`,
            label: note.title,
            description: stateText(note),
            tooltip: noteTooltip(note),
            icon: STATE_ICONS[note.state] ?? 'note',
            color: stale ? 'list.warningForeground' : undefined,
            contextValue: stale ? 'stale-note' : 'note',
            slug: note.slug,
            file: noteFile(note),
            children: note.citations.map((c, i) => ({
                id: `note/${key}/cite${i}`,
                label: c.label,
                description: citationText(c),
                tooltip: `${c.label}: ${citationText(c)}`,
                icon: c.status === 'changed' || c.status === 'lost' ? 'warning' : 'references',
                color: c.status === 'changed' || c.status === 'lost' ? 'list.warningForeground' : undefined,
                contextValue: 'citation' as const,
                slug: note.slug,
                target: note.root ? { root: note.root, ...citationTarget(c) } : undefined,
            })),
        };
    });
}

/** The view's message: how many notes, how many stale (undefined when there are none: the welcome text shows). */
export function viewMessage(notes: MemoryNote[]): string | undefined {
    if (notes.length === 0) {
        return undefined;
    }
    const stale = notes.filter(isStale).length;
    return `${notes.length} note${notes.length === 1 ? '' : 's'}${stale > 0 ? `, ${stale} stale` : ''}`;
}

/** `sift.memory.add` for a selection (an empty one is the cursor: the definition it lies in); undefined for blank text. */
export function selectionAddArgs(uri: string, range: Range, text: string): MemoryAddArgs | undefined {
    const body = text.trim();
    if (body === '') {
        return undefined;
    }
    return {
        uri,
        range: { start: { line: range.start.line, character: range.start.character }, end: { line: range.end.line, character: range.end.character } },
        text: body,
    };
}

/**
 * `sift.memory.add` for a note the agent proposed, once the user accepted it: the note as the
 * result carried it, with `uri` the run's workspace folder. `cite` is always sent, as a list of
 * strings (the server takes a missing one for "cite the file `uri` names", and refuses anything
 * but a list of strings).
 */
export function proposedAddArgs(note: ProposedNote, rootUri: string): MemoryAddArgs {
    const cite = Array.isArray(note.cite) ? note.cite.filter((c): c is string => typeof c === 'string') : [];
    const args: MemoryAddArgs = { uri: rootUri, cite, text: note.text, author: 'agent' };
    if (typeof note.title === 'string' && note.title.trim() !== '') {
        args.title = note.title;
    }
    return args;
}

/**
 * `sift.memory.add` for the lesson of a run rejected with a reason (the `lesson` of
 * `sift.agent.discard`'s answer), once the user keeps it: that object as it came, its one
 * argument. Undefined when the answer carries none, or nothing `sift.memory.add` could take (no
 * `uri` or no text); `cite` keeps only strings.
 */
export function lessonAddArgs(lesson: unknown): Extract<MemoryAddArgs, { cite: string[] }> | undefined {
    if (typeof lesson !== 'object' || lesson === null) {
        return undefined;
    }
    const l = lesson as Partial<Record<keyof AgentLesson, unknown>>;
    if (typeof l.uri !== 'string' || l.uri === '' || typeof l.text !== 'string' || l.text.trim() === '') {
        return undefined;
    }
    const cite = Array.isArray(l.cite) ? l.cite.filter((c): c is string => typeof c === 'string') : [];
    const args: Extract<MemoryAddArgs, { cite: string[] }> = { ...(lesson as object), uri: l.uri, cite, text: l.text };
    if (typeof l.title !== 'string' || l.title.trim() === '') {
        delete args.title;
    }
    return args;
}

/** The offer after a rejection with a reason, to keep its lesson (the button is Keep). */
export function lessonQuestion(lesson: { title?: string; cite: string[] }): string {
    const about = [lesson.title ? `“${lesson.title}”` : '', lesson.cite.length > 0 ? `citing ${lesson.cite.join(', ')}` : ''].filter((x) => x !== '');
    return `Keep the lesson as a memory note? Later agent runs about that code get it.${about.length > 0 ? ` (${about.join(', ')})` : ''}`;
}

/** The message after `sift.memory.add`. */
export function addedMessage(result: MemoryAddResult): string {
    const cites = result.cites.length > 0 ? `, citing ${result.cites.join(', ')}` : '';
    return `sift memory: wrote ${result.slug}${cites}.`;
}

/** The modal question before deleting a note. */
export function deleteQuestion(note: Pick<MemoryNote, 'title' | 'slug'>): string {
    return `Delete the sift note “${note.title}”? Its file, .sift/memory/${note.slug}.md, is deleted.`;
}

/** The modal question before writing a note the agent proposed. */
export function rememberQuestion(note: ProposedNote): string {
    const cites = note.cite.length > 0 ? ` It cites ${note.cite.join(', ')}.` : '';
    return `Remember the agent's note “${note.title}” in .sift/memory/?${cites}\n\n${note.text}`;
}

/** An error answered to a `sift.memory.*` command, for the user. */
export function memoryError(command: string, error: unknown): string {
    if (isUnknownCommand(error)) {
        return `your sift server has no memory notes yet (${command}); update sift`;
    }
    const e = (typeof error === 'object' && error !== null ? error : {}) as { message?: unknown };
    return typeof e.message === 'string' ? e.message : String(error);
}

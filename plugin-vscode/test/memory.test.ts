// Memory notes: how sift.memory.list's notes become the Sift Memory view's rows, what is sent to
// sift.memory.add (a selection, a note the agent proposed), the agent view's proposed notes, and
// the package.json wiring of the view.

import assert from 'node:assert/strict';
import { test } from 'node:test';

import { AgentRun } from '../src/agent';
import { COMMANDS, MEMORY_VIEW } from '../src/commands';
import {
    addedMessage,
    citationTarget,
    deleteQuestion,
    lessonAddArgs,
    lessonQuestion,
    memoryError,
    noteFile,
    noteRows,
    proposedAddArgs,
    rememberQuestion,
    selectionAddArgs,
    sortNotes,
    viewMessage,
} from '../src/memory';
import type { AgentResult, MemoryNote, NoteCitation, ProposedNote } from '../src/protocol';
import { readPackageJson } from './paths';

function cite(extra: Partial<NoteCitation> = {}): NoteCitation {
    return {
        label: 'billing/invoice.py#compute_invoice_total',
        path: 'billing/invoice.py',
        lines: '13-16',
        symbol: 'compute_invoice_total',
        hash: 'b3:0123456789abcdef',
        status: 'fresh',
        now: null,
        reason: null,
        ...extra,
    };
}

function note(slug: string, title: string, extra: Partial<MemoryNote> = {}): MemoryNote {
    return {
        root: '/repo',
        slug,
        path: `/repo/.sift/memory/${slug}.md`,
        title,
        state: 'fresh',
        stale: null,
        scope: [],
        author: 'user',
        origin: null,
        created: '2026-12-02',
        updated: '2026-12-02',
        citations: [cite()],
        text: `${title}.\n\nMore words.`,
        ...extra,
    };
}

const staleNote = note('discounts-are-percent', 'Apply discounts before taxes', {
    state: 'stale',
    stale: 'billing/discounts.py#apply_discount: the cited code changed',
    citations: [cite({ label: 'billing/discounts.py#apply_discount', path: 'billing/discounts.py', lines: '4-7', status: 'changed', reason: 'the cited code changed' })],
});
const freshNote = note('totals-round-once', 'Totals are rounded once');
const movedNote = note('cart-total', 'Cart totals come from invoices', {
    state: 'moved',
    citations: [cite({ status: 'moved', now: 'billing/invoice.py:20-23' })],
});

test('the view lists fresh notes first and stale ones below, flagged with the reason', () => {
    const rows = noteRows([staleNote, freshNote, movedNote]);
    assert.deepEqual(
        rows.map((r) => [r.label, r.description, r.contextValue]),
        [
            ['Cart totals come from invoices', 'moved', 'note'],
            ['Totals are rounded once', 'fresh', 'note'],
            ['Apply discounts before taxes', 'stale: billing/discounts.py#apply_discount: the cited code changed', 'stale-note'],
        ],
    );
    const stale = rows[2];
    assert.equal(stale.icon, 'warning');
    assert.equal(stale.color, 'list.warningForeground');
    assert.equal(rows[1].icon, 'note');
    assert.equal(rows[1].color, undefined);
    // A note row opens its file; its citations are children that open the cited code.
    assert.equal(stale.file, '/repo/.sift/memory/discounts-are-percent.md');
    assert.equal(stale.children!.length, 1);
    assert.equal(stale.children![0].label, 'billing/discounts.py#apply_discount');
    assert.equal(stale.children![0].description, 'changed: the cited code changed');
    assert.deepEqual(stale.children![0].target, { root: '/repo', path: 'billing/discounts.py', line: 4 });
    assert.match(stale.tooltip!, /cites billing\/discounts\.py#apply_discount \(changed: the cited code changed\)/);
    assert.match(stale.tooltip!, /discounts-are-percent · user · 2026-12-02/);
    // Ids are unique (VS Code keeps expansion by id) and stable across refreshes.
    const ids = rows.flatMap((r) => [r.id, ...(r.children ?? []).map((c) => c.id)]);
    assert.equal(new Set(ids).size, ids.length);
    assert.deepEqual(noteRows([freshNote])[0].id, rows[1].id);
});

test('stale notes sort below fresh ones whatever their titles; a missing reason still says stale', () => {
    const a = note('a', 'A stale one', { state: 'stale', stale: null });
    const z = note('z', 'Z fresh one');
    assert.deepEqual(sortNotes([a, z]).map((n) => n.slug), ['z', 'a']);
    assert.equal(noteRows([a])[0].description, 'stale: the cited code changed');
});

test('a moved citation is opened where its code is now', () => {
    assert.deepEqual(citationTarget(cite({ status: 'moved', now: 'billing/invoice.py:20-23' })), { path: 'billing/invoice.py', line: 20 });
    assert.deepEqual(citationTarget(cite({ now: 'web/cart.ts:7' })), { path: 'web/cart.ts', line: 7 });
    assert.deepEqual(citationTarget(cite({ lines: null })), { path: 'billing/invoice.py', line: 1 });
});

test('the view message counts notes and stale notes; no notes, no message (the welcome shows)', () => {
    assert.equal(viewMessage([]), undefined);
    assert.equal(viewMessage([freshNote]), '1 note');
    assert.equal(viewMessage([freshNote, staleNote, movedNote]), '3 notes, 1 stale');
});

test('note files: the server path, else under the root', () => {
    assert.equal(noteFile(freshNote), '/repo/.sift/memory/totals-round-once.md');
    assert.equal(noteFile({ slug: 'x', root: '/r/', path: null }), '/r/.sift/memory/x.md');
    assert.equal(noteFile({ slug: 'x' }), undefined);
});

test('sift.memory.add for a selection: the document and the range, the text trimmed; blank text sends nothing', () => {
    const range = { start: { line: 12, character: 4 }, end: { line: 15, character: 0 } };
    assert.deepEqual(selectionAddArgs('file:///repo/billing/invoice.py', range, '  Totals are rounded once.  '), {
        uri: 'file:///repo/billing/invoice.py',
        range,
        text: 'Totals are rounded once.',
    });
    // A VS Code Selection carries more than line/character: only those two are sent.
    const selection = { start: { line: 3, character: 0, extra: 1 }, end: { line: 3, character: 0, extra: 2 }, anchor: {}, active: {} };
    const args = selectionAddArgs('file:///x.py', selection, 'fact') as { range: unknown };
    assert.deepEqual(args.range, { start: { line: 3, character: 0 }, end: { line: 3, character: 0 } });
    assert.equal(selectionAddArgs('file:///x.py', range, '   '), undefined);
});

const proposed: ProposedNote = {
    title: 'Invoice numbers have five digits',
    text: 'Invoice numbers are INV-YEAR-NNNNN: the accounting import parses five digits.',
    cite: ['billing/invoice.py#format_invoice_number'],
    author: 'agent',
};

test('sift.memory.add for a proposed note: the note as the agent result carried it, cite always a list, the folder as uri', () => {
    assert.deepEqual(proposedAddArgs(proposed, 'file:///repo'), {
        uri: 'file:///repo',
        cite: ['billing/invoice.py#format_invoice_number'],
        text: proposed.text,
        title: proposed.title,
        author: 'agent',
    });
    // Without citations `cite` is still sent (empty): without it the server would cite the file `uri` names.
    const none = proposedAddArgs({ ...proposed, cite: [] }, 'file:///repo') as { cite: string[] };
    assert.deepEqual(none.cite, []);
    // Anything but strings is dropped (the server refuses a cite list with other values).
    const odd = proposedAddArgs({ ...proposed, cite: ['a.py', 3 as unknown as string] }, 'file:///repo') as { cite: string[] };
    assert.deepEqual(odd.cite, ['a.py']);
    const untitled = proposedAddArgs({ ...proposed, title: ' ' }, 'file:///repo');
    assert.equal('title' in untitled, false, 'a blank title is left to the server (it derives one)');
});

const lesson = {
    uri: 'file:///repo/billing/invoice.py',
    cite: ['billing/invoice.py:21-21'],
    text: 'An agent change to `billing/invoice.py` (asked: "make invoice numbers six digits") was refused: the import reads five digits',
    title: 'Refused: the import reads five digits',
};

test("sift.memory.add for a rejected run's lesson: the lesson object as sift.agent.discard answered it", () => {
    assert.deepEqual(lessonAddArgs(lesson), lesson);
    assert.notEqual(lessonAddArgs(lesson), lesson, 'a copy: the answer is not changed');
    // Fields the server may add later go along: the lesson is the argument object.
    assert.deepEqual(lessonAddArgs({ ...lesson, author: 'user' }), { ...lesson, author: 'user' });
    // Nothing sift.memory.add could take: no lesson at all, no uri, no text.
    for (const bad of [undefined, null, 'x', 3, {}, { ...lesson, uri: '' }, { ...lesson, uri: 7 }, { ...lesson, text: '  ' }, { cite: lesson.cite, text: lesson.text }]) {
        assert.equal(lessonAddArgs(bad), undefined, JSON.stringify(bad));
    }
    assert.deepEqual(lessonAddArgs({ ...lesson, cite: ['a.py:1-2', 4] })!.cite, ['a.py:1-2']);
    assert.deepEqual(lessonAddArgs({ ...lesson, cite: undefined })!.cite, []);
    assert.equal('title' in lessonAddArgs({ ...lesson, title: ' ' })!, false, 'a blank title is left to the server');
});

test('the offer to keep a lesson', () => {
    assert.equal(
        lessonQuestion(lesson),
        'Keep the lesson as a memory note? Later agent runs about that code get it. (“Refused: the import reads five digits”, citing billing/invoice.py:21-21)',
    );
    assert.equal(lessonQuestion({ cite: [] }), 'Keep the lesson as a memory note? Later agent runs about that code get it.');
});

test('messages and questions', () => {
    assert.equal(
        addedMessage({ slug: 'totals-round-once', path: '/repo/.sift/memory/totals-round-once.md', cites: ['billing/invoice.py#compute_invoice_total'] }),
        'sift memory: wrote totals-round-once, citing billing/invoice.py#compute_invoice_total.',
    );
    assert.equal(addedMessage({ slug: 'x', path: '/x', cites: [] }), 'sift memory: wrote x.');
    assert.match(deleteQuestion(freshNote), /^Delete the sift note “Totals are rounded once”\? Its file, \.sift\/memory\/totals-round-once\.md, is deleted\.$/);
    assert.match(rememberQuestion(proposed), /It cites billing\/invoice\.py#format_invoice_number\.\n\nInvoice numbers are INV-YEAR-NNNNN/);
    assert.match(memoryError('sift.memory.list', { code: -32601, message: 'Method not found' }), /no memory notes yet.*update sift/);
    assert.match(memoryError('sift.memory.add', { code: -32602, message: 'unknown command "sift.memory.add"' }), /no memory notes yet/);
    assert.equal(memoryError('sift.memory.add', { code: -32602, message: 'billing/x.py: no such file' }), 'billing/x.py: no such file');
});

test('the agent view lists proposed notes; a remembered one says so and loses its Remember action', () => {
    const run = new AgentRun(3, { task: 'six digits' });
    const result: AgentResult = {
        id: 'r1',
        stop: 'done',
        detail: 'done',
        answer: 'Done.',
        diff: '',
        files: [],
        rules: [],
        model: 'x',
        notes: [proposed, { ...proposed, title: 'No citation', cite: [] }],
    };
    run.finish(result);
    const notes = run.rows().find((r) => r.label === 'Proposed memory notes');
    assert.ok(notes, 'a row for the proposed notes');
    assert.equal(notes.description, '2');
    assert.deepEqual(
        notes.children!.map((c) => [c.label, c.description, c.contextValue, c.note]),
        [
            ['Invoice numbers have five digits', 'billing/invoice.py#format_invoice_number', 'proposedNote', 0],
            ['No citation', 'no citation', 'proposedNote', 1],
        ],
    );
    run.remembered.add(0);
    const after = run.rows().find((r) => r.label === 'Proposed memory notes')!;
    assert.equal(after.description, '2, 1 remembered');
    assert.equal(after.children![0].contextValue, 'rememberedNote');
    assert.equal(after.children![0].description, 'remembered');
    // No notes in the result (or an older server without the field): no row.
    const plain = new AgentRun(4, { task: 't' });
    plain.finish({ ...result, notes: undefined });
    assert.equal(plain.rows().some((r) => r.label === 'Proposed memory notes'), false);
});

test('package.json: the Memory view, its actions, and Remember only on proposed notes', () => {
    const pkg = readPackageJson() as unknown as {
        contributes: {
            views: Record<string, { id: string; name: string }[]>;
            viewsWelcome: { view: string; contents: string }[];
            menus: Record<string, { command: string; when?: string; group?: string }[]>;
        };
    };
    const c = pkg.contributes;
    assert.ok(c.views.sift.some((v) => v.id === MEMORY_VIEW && v.name === 'Memory'));
    assert.ok(c.viewsWelcome.some((w) => w.view === MEMORY_VIEW && w.contents.includes(`command:${COMMANDS.rememberSelection}`)));
    const title = c.menus['view/title'].filter((m) => m.when === `view == ${MEMORY_VIEW}`).map((m) => m.command);
    assert.deepEqual(title.sort(), [COMMANDS.refreshMemory, COMMANDS.rememberSelection].sort());
    const items = c.menus['view/item/context'];
    const on = (cmd: string) => items.filter((m) => m.command === cmd).map((m) => m.when ?? '');
    assert.ok(on(COMMANDS.verifyMemoryNote).some((w) => w.includes('viewItem == stale-note') && w.includes(MEMORY_VIEW)));
    assert.ok(on(COMMANDS.deleteMemoryNote).every((w) => w.includes(MEMORY_VIEW)));
    assert.ok(on(COMMANDS.rememberAgentNote).length > 0);
    assert.ok(on(COMMANDS.rememberAgentNote).every((w) => w.includes('viewItem == proposedNote')), 'never on a remembered note');
    assert.ok(c.menus['editor/context'].some((m) => m.command === COMMANDS.rememberSelection));
    // Actions that need a row are not in the palette.
    const hidden = c.menus.commandPalette.filter((m) => m.when === 'false').map((m) => m.command);
    for (const cmd of [COMMANDS.openMemoryNote, COMMANDS.verifyMemoryNote, COMMANDS.deleteMemoryNote, COMMANDS.rememberAgentNote]) {
        assert.ok(hidden.includes(cmd), cmd);
    }
});

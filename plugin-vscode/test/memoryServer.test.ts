// Drives the real `sift lsp`'s memory notes the way the Sift Memory view does, on a copy of
// e2e/fixture (one fresh note, one whose cited code changed since it was written):
// sift.memory.list (the rows the view shows), the code lens and its sift.memory.show, Remember
// Selection's sift.memory.add, Verify, Delete, and Remember on a note the agent proposed (a
// `remember` call scripted through e2e/fake-openai.mjs) sent back exactly as the extension sends
// it. Skipped when no sift binary is found or when its server has no memory notes (it does not
// advertise sift.memory.list).

import assert from 'node:assert/strict';
import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { pathToFileURL } from 'node:url';
import { after, before, test } from 'node:test';

import { advertises } from '../src/features';
import { noteRows, proposedAddArgs, selectionAddArgs } from '../src/memory';
import {
    AGENT_METHOD,
    CMD_MEMORY_ADD,
    CMD_MEMORY_DELETE,
    CMD_MEMORY_LIST,
    CMD_MEMORY_SHOW,
    CMD_MEMORY_VERIFY,
    type AgentResult,
    type MemoryAddResult,
    type MemoryListResponse,
} from '../src/protocol';
import { serverLaunch } from '../src/settings';
import { LspClient, type RpcError } from './lspClient';
import { PLUGIN, fixtureCopy, siftBinary } from './paths';

const binary = siftBinary();
const FRESH = 'invoice-totals-are-rounded-once-at-the-end';
const STALE = 'discounts-are-capped-at-50-percent';
const REMEMBER = {
    tool: {
        name: 'remember',
        arguments: {
            title: 'Invoice numbers have five digits',
            text: 'Invoice numbers are INV-YEAR-NNNNN: the accounting import reads exactly five digits.',
            cite: ['billing/invoice.py#format_invoice_number'],
        },
    },
    final: 'Noted how invoice numbers are formatted.',
};

function fakeModel(script: object): Promise<{ url: string; proc: ChildProcessWithoutNullStreams }> {
    const proc = spawn(process.execPath, [path.join(PLUGIN, 'e2e', 'fake-openai.mjs'), JSON.stringify(script)], { stdio: ['pipe', 'pipe', 'pipe'] });
    let out = '';
    return new Promise((resolve, reject) => {
        proc.stdout.on('data', (d: Buffer) => {
            out += d.toString();
            const m = out.match(/listening (\d+)/);
            if (m) {
                resolve({ url: `http://127.0.0.1:${m[1]}/v1`, proc });
            }
        });
        proc.on('error', reject);
        proc.on('exit', (code) => reject(new Error(`fake-openai exited ${code}: ${out}`)));
    });
}

let skip: string | false = binary === undefined ? 'no sift binary (build it, or set SIFT_BIN)' : false;
let client: LspClient;
let root: string;
let rootUri: string;
let model: ChildProcessWithoutNullStreams | undefined;

function execute<R>(command: string, args: unknown[]): Promise<R> {
    return client.request<R>('workspace/executeCommand', { command, arguments: args });
}

async function list(): Promise<MemoryListResponse> {
    return execute<MemoryListResponse>(CMD_MEMORY_LIST, [{}]);
}

before(async () => {
    if (skip) {
        return;
    }
    root = fixtureCopy();
    rootUri = pathToFileURL(root).href;
    const fake = await fakeModel(REMEMBER);
    model = fake.proc;
    const env = {
        ...process.env,
        XDG_CONFIG_HOME: path.join(root, '.xdg'),
        SIFT_MODEL_BACKEND: 'openai',
        SIFT_MODEL_BASE_URL: fake.url,
        SIFT_MODEL_NAME: 'x',
    };
    client = new LspClient(binary!, serverLaunch({ get: () => undefined }).args, root, env);
    const init = await client.request<{ capabilities: Record<string, unknown> }>('initialize', {
        processId: process.pid,
        rootUri,
        workspaceFolders: [{ uri: rootUri, name: path.basename(root) }],
        capabilities: { window: { workDoneProgress: true }, general: { positionEncodings: ['utf-16'] } },
    });
    client.notify('initialized', {});
    await client.until(() => client.notifications.some((n) => n.method === '$/progress' && (n.params as { value: { kind: string } }).value.kind === 'end'), 60000);
    if (!advertises(init.capabilities, CMD_MEMORY_LIST)) {
        skip = 'this sift lsp has no memory notes yet (it does not advertise sift.memory.list)';
        return;
    }
    // The notes are checked after the first index update: wait until they are.
    const deadline = Date.now() + 20000;
    while ((await list()).notes.length < 2 && Date.now() < deadline) {
        await new Promise((r) => setTimeout(r, 200));
    }
});

after(async () => {
    if (client) {
        assert.equal(await client.close(), 0);
    }
    model?.kill();
    if (root) {
        fs.rmSync(root, { recursive: true, force: true });
    }
});

test('sift.memory.list: the fixture notes as the view shows them, the fresh one first, the stale one with its reason', async (t) => {
    if (skip) {
        t.skip(skip);
        return;
    }
    const { notes } = await list();
    assert.deepEqual(notes.map((n) => n.slug).sort(), [STALE, FRESH].sort());
    const fresh = notes.find((n) => n.slug === FRESH)!;
    assert.equal(fresh.state, 'fresh');
    assert.equal(fresh.path, path.join(root, '.sift', 'memory', `${FRESH}.md`));
    assert.equal(fresh.root, root);
    const rows = noteRows(notes);
    assert.deepEqual(rows.map((r) => r.slug), [FRESH, STALE]);
    assert.equal(rows[0].description, 'fresh');
    assert.equal(rows[1].contextValue, 'stale-note');
    assert.match(rows[1].description!, /^stale: billing\/discounts\.py#apply_discount/);
    assert.equal(rows[1].children![0].description!.split(':')[0], 'changed');
    assert.ok(fs.existsSync(rows[0].file!), 'a note row opens a file that exists');
    // A citation row opens the cited code: the file exists and the line is in the definition.
    const target = rows[0].children![0].target!;
    const cited = fs.readFileSync(path.join(target.root, target.path), 'utf8').split('\n');
    assert.match(cited[target.line - 1], /def compute_invoice_total/);
});

test('the code lens names its notes; sift.memory.show answers what the extension opens', async (t) => {
    if (skip) {
        t.skip(skip);
        return;
    }
    const uri = pathToFileURL(path.join(root, 'billing', 'invoice.py')).href;
    const lenses = await client.request<{ range: { start: { line: number } }; command: { title: string; command: string; arguments: unknown[] } }[]>(
        'textDocument/codeLens',
        { textDocument: { uri } },
    );
    const lens = lenses.find((l) => l.command.command === CMD_MEMORY_SHOW);
    assert.ok(lens, JSON.stringify(lenses));
    assert.equal(lens.command.title, '1 sift note');
    const shown = await execute<MemoryListResponse>(lens.command.command, lens.command.arguments);
    assert.deepEqual(shown.notes.map((n) => n.slug), [FRESH]);
    assert.ok(shown.notes[0].path && fs.existsSync(shown.notes[0].path));
});

test('Remember Selection: sift.memory.add cites the definition the selection lies in; Verify makes a stale note fresh; Delete removes the file', async (t) => {
    if (skip) {
        t.skip(skip);
        return;
    }
    const uri = pathToFileURL(path.join(root, 'web', 'cart.ts')).href;
    const text = fs.readFileSync(path.join(root, 'web', 'cart.ts'), 'utf8').split('\n');
    const line = text.findIndex((l) => /\w+\s*\(/.test(l) && !l.trim().startsWith('//'));
    assert.ok(line >= 0);
    const args = selectionAddArgs(uri, { start: { line, character: 0 }, end: { line, character: 0 } }, 'Cart items are added by value, never shared.')!;
    const added = await execute<MemoryAddResult>(CMD_MEMORY_ADD, [args]);
    assert.ok(added.slug);
    assert.equal(added.cites.length, 1);
    assert.match(added.cites[0], /^web\/cart\.ts[#:]/);
    assert.ok(fs.existsSync(added.path));
    assert.ok((await list()).notes.some((n) => n.slug === added.slug && n.state === 'fresh'));

    // Verify: the user says the stale note still holds; it is fresh again.
    const verified = await execute<{ verified: boolean }>(CMD_MEMORY_VERIFY, [{ slug: STALE }]);
    assert.equal(verified.verified, true);
    assert.equal((await list()).notes.find((n) => n.slug === STALE)?.state, 'fresh');

    // Delete: the file goes, and so does the row.
    await execute(CMD_MEMORY_DELETE, [{ slug: added.slug }]);
    assert.equal(fs.existsSync(added.path), false);
    assert.equal((await list()).notes.some((n) => n.slug === added.slug), false);
    await assert.rejects(execute(CMD_MEMORY_DELETE, [{ slug: added.slug }]), (e: RpcError) => /no note/.test(e.message));
});

test('Remember on a note the agent proposed: what sift/agent answered, sent back as the extension sends it, is written as the agent\'s', async (t) => {
    if (skip) {
        t.skip(skip);
        return;
    }
    const result = await client.request<AgentResult>(AGENT_METHOD, { task: 'write down how invoice numbers look', root: rootUri }, 60000);
    assert.equal(result.stop, 'done', result.detail);
    const proposed = result.notes ?? [];
    assert.equal(proposed.length, 1, JSON.stringify(result));
    assert.deepEqual(proposed[0].cite, ['billing/invoice.py#format_invoice_number']);
    const before = (await list()).notes.length;
    assert.equal(before, 2, 'nothing is written before the user accepts');
    const added = await execute<MemoryAddResult>(CMD_MEMORY_ADD, [proposedAddArgs(proposed[0], rootUri)]);
    assert.deepEqual(added.cites, ['billing/invoice.py#format_invoice_number']);
    const note = (await list()).notes.find((n) => n.slug === added.slug)!;
    assert.equal(note.author, 'agent');
    assert.equal(note.title, 'Invoice numbers have five digits');
    assert.equal(note.state, 'fresh');
    assert.deepEqual(note.citations.map((c) => c.label), ['billing/invoice.py#format_invoice_number']);
    // A proposed note without citations stays without: `cite: []` is sent, not left out (the
    // server would take the workspace folder the uri names as the thing to cite).
    const bare = await execute<MemoryAddResult>(CMD_MEMORY_ADD, [proposedAddArgs({ ...proposed[0], title: 'No citation here', cite: [] }, rootUri)]);
    assert.deepEqual(bare.cites, []);
});

test('cited code changes: the server rewrites .sift/memory-state.json (which the view watches) and the note is stale', async (t) => {
    if (skip) {
        t.skip(skip);
        return;
    }
    const stateFile = path.join(root, '.sift', 'memory-state.json');
    assert.ok(fs.existsSync(stateFile), 'the server keeps the notes\' states in .sift/memory-state.json');
    const stamp = () => fs.statSync(stateFile).mtimeMs;
    const before = stamp();
    assert.equal((await list()).notes.find((n) => n.slug === FRESH)?.state, 'fresh');
    const file = path.join(root, 'billing', 'invoice.py');
    const code = fs.readFileSync(file, 'utf8');
    assert.ok(code.includes('round(subtotal * (1 + tax_rate), 2)'));
    fs.writeFileSync(file, code.replace('round(subtotal * (1 + tax_rate), 2)', 'round(subtotal * (1 + tax_rate), 3)'));
    client.notify('workspace/didChangeWatchedFiles', { changes: [{ uri: pathToFileURL(file).href, type: 2 }] });
    // (Updates after the first send no work-done progress: the state file is the signal.)
    const deadline = Date.now() + 30000;
    while (stamp() === before && Date.now() < deadline) {
        await new Promise((r) => setTimeout(r, 100));
    }
    assert.notEqual(stamp(), before, 'the server rewrote the state file');
    const note = (await list()).notes.find((n) => n.slug === FRESH)!;
    assert.equal(note.state, 'stale');
    assert.match(noteRows([note])[0].description!, /^stale: billing\/invoice\.py#compute_invoice_total: the cited code changed/);
});

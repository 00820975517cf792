// Drives the real `sift lsp`'s agent the way the extension does, against a scripted
// OpenAI-compatible endpoint on 127.0.0.1 (e2e/fake-openai.mjs): `sift/agent` with work-done
// progress and partial results, the result the view shows, `sift.agent.apply` (a
// `workspace/applyEdit` whose edits need confirmation; nothing written to disk), a file changed
// on disk meanwhile, `sift.agent.discard` (with a reason: the lesson it answers, kept with
// `sift.memory.add` exactly as the extension sends it), and cancellation. Skipped when no sift binary is found
// or when this sift's language server has no agent yet (it does not advertise sift.agent.apply).

import assert from 'node:assert/strict';
import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { pathToFileURL } from 'node:url';
import { after, before, test } from 'node:test';

import { AgentRun, discardArgs } from '../src/agent';
import { advertises } from '../src/features';
import { lessonAddArgs } from '../src/memory';
import {
    AGENT_METHOD,
    CMD_AGENT_APPLY,
    CMD_AGENT_DISCARD,
    CMD_MEMORY_ADD,
    type AgentApplyResult,
    type AgentDiscardResult,
    type AgentEvent,
    type AgentResult,
    type MemoryAddResult,
} from '../src/protocol';
import { serverLaunch } from '../src/settings';
import { LspClient, type RpcError } from './lspClient';
import { PLUGIN, fixtureCopy, siftBinary } from './paths';

const binary = siftBinary();
const OLD = 'return f"INV-{year}-{sequence:05d}"';
const NEW = 'return f"INV-{year}-{sequence:06d}"';
const SCRIPT = {
    tool: { name: 'edit', arguments: { path: 'billing/invoice.py', old_text: OLD, new_text: NEW } },
    final: 'Invoice numbers now have six digits.',
};

/** Starts e2e/fake-openai.mjs; resolves with its base URL. */
function fakeModel(script: object): Promise<{ url: string; proc: ChildProcessWithoutNullStreams; log: () => string }> {
    const proc = spawn(process.execPath, [path.join(PLUGIN, 'e2e', 'fake-openai.mjs'), JSON.stringify(script)], { stdio: ['pipe', 'pipe', 'pipe'] });
    let out = '';
    return new Promise((resolve, reject) => {
        proc.stdout.on('data', (d: Buffer) => {
            out += d.toString();
            const m = out.match(/listening (\d+)/);
            if (m) {
                resolve({ url: `http://127.0.0.1:${m[1]}/v1`, proc, log: () => out });
            }
        });
        proc.on('error', reject);
        proc.on('exit', (code) => reject(new Error(`fake-openai exited ${code}: ${out}`)));
    });
}

let skip: string | false = binary === undefined ? 'no sift binary (build it, or set SIFT_BIN)' : false;
let client: LspClient;
let root: string;
let models: { proc: ChildProcessWithoutNullStreams; log: () => string }[] = [];

async function startServer(modelUrl: string, dir: string): Promise<Record<string, unknown>> {
    const env = {
        ...process.env,
        XDG_CONFIG_HOME: path.join(dir, '.xdg'),
        SIFT_MODEL_BACKEND: 'openai',
        SIFT_MODEL_BASE_URL: modelUrl,
        SIFT_MODEL_NAME: 'x',
    };
    const c = new LspClient(binary!, serverLaunch({ get: () => undefined }).args, dir, env);
    const init = await c.request<{ capabilities: Record<string, unknown> }>('initialize', {
        processId: process.pid,
        rootUri: pathToFileURL(dir).href,
        workspaceFolders: [{ uri: pathToFileURL(dir).href, name: path.basename(dir) }],
        capabilities: {
            window: { workDoneProgress: true },
            general: { positionEncodings: ['utf-16'] },
            workspace: {
                applyEdit: true,
                workspaceEdit: { documentChanges: true, resourceOperations: ['create', 'rename', 'delete'], changeAnnotationSupport: { groupsOnLabel: true } },
            },
        },
    });
    c.notify('initialized', {});
    await c.until(() => c.notifications.some((n) => n.method === '$/progress' && (n.params as { value: { kind: string } }).value.kind === 'end'), 60000);
    client = c;
    return init.capabilities;
}

before(async () => {
    if (skip) {
        return;
    }
    root = fixtureCopy();
    const model = await fakeModel(SCRIPT);
    models.push(model);
    const capabilities = await startServer(model.url, root);
    if (!advertises(capabilities, CMD_AGENT_APPLY)) {
        skip = 'this sift lsp has no agent yet (it does not advertise sift.agent.apply)';
    }
});

after(async () => {
    if (client) {
        assert.equal(await client.close(), 0);
    }
    for (const m of models) {
        m.proc.kill();
    }
    if (root) {
        fs.rmSync(root, { recursive: true, force: true });
    }
});

function progressOf(token: string): unknown[] {
    return client.notifications
        .filter((n) => n.method === '$/progress' && (n.params as { token: unknown }).token === token)
        .map((n) => (n.params as { value: unknown }).value);
}

async function runAgent(tag: string): Promise<AgentResult> {
    return client.request<AgentResult>(
        AGENT_METHOD,
        { task: 'make invoice numbers six digits', root: pathToFileURL(root).href, workDoneToken: `w-${tag}`, partialResultToken: `p-${tag}` },
        120000,
    );
}

const invoice = () => fs.readFileSync(path.join(root, 'billing', 'invoice.py'), 'utf8');

test('sift/agent: progress per step, partial events, the proposed files', async (t) => {
    if (skip) {
        t.skip(skip);
        return;
    }
    const result = await runAgent('1');
    t.diagnostic(`result: ${JSON.stringify({ ...result, files: result.files.map((f) => f.path) })}`);
    assert.equal(result.stop, 'done');
    assert.equal(typeof result.id, 'string');
    assert.equal(result.answer, 'Invoice numbers now have six digits.');
    assert.equal(result.model, 'x');
    assert.match(result.diff, /^-    return f"INV-\{year\}-\{sequence:05d\}"$/m);
    assert.equal(result.files.length, 1);
    const [file] = result.files;
    assert.equal(file.path, 'billing/invoice.py');
    assert.equal(file.uri, pathToFileURL(path.join(root, 'billing', 'invoice.py')).href);
    assert.equal(file.kind, 'modify');
    assert.equal(file.original, invoice());
    assert.equal(file.proposed, invoice().replace(OLD, NEW));

    // The `end` may arrive just after the response (both are sent from different tasks).
    await client.until(() => (progressOf('w-1') as { kind: string }[]).some((w) => w.kind === 'end'), 5000);
    const work = progressOf('w-1') as { kind: string; message?: string }[];
    assert.equal(work[0]?.kind, 'begin', JSON.stringify(work));
    assert.equal(work.at(-1)?.kind, 'end');
    assert.ok(work.some((w) => w.kind === 'report' && /edit path=billing\/invoice\.py/.test(w.message ?? '')), JSON.stringify(work));

    const events = (progressOf('p-1') as { events: AgentEvent[] }[]).flatMap((v) => v.events);
    assert.ok(events.some((e) => e.kind === 'step'), JSON.stringify(events));
    assert.ok(events.some((e) => e.kind === 'tool' && e.name === 'edit' && /billing\/invoice\.py/.test(e.summary)), JSON.stringify(events));
    assert.ok(events.some((e) => e.kind === 'result' && e.name === 'edit' && !e.error), JSON.stringify(events));

    // What the view shows for it.
    const run = new AgentRun(1, { task: 'make invoice numbers six digits' });
    run.add(events);
    run.finish(result);
    const rows = run.rows();
    assert.ok(rows.some((r) => r.children?.some((c) => c.label.startsWith('edit path=billing/invoice.py'))), JSON.stringify(rows));
    assert.equal(rows.find((r) => r.label === 'Proposed change')?.children?.[0].path, 'billing/invoice.py');

    // Accept: the server sends the change as a workspace edit that needs confirmation, and
    // writes nothing itself.
    let edit: Record<string, unknown> | undefined;
    client.answer = (method, params) => {
        if (method === 'workspace/applyEdit') {
            edit = params as Record<string, unknown>;
            return { applied: true };
        }
        return null;
    };
    const applied = await client.request<AgentApplyResult>('workspace/executeCommand', { command: CMD_AGENT_APPLY, arguments: [{ id: result.id }] });
    assert.deepEqual(applied.applied, true, JSON.stringify(applied));
    assert.ok(edit, 'no workspace/applyEdit');
    const we = (edit as { edit: { changeAnnotations?: Record<string, { needsConfirmation?: boolean }>; documentChanges?: unknown[]; changes?: unknown } }).edit;
    t.diagnostic(`applyEdit: ${JSON.stringify(edit).slice(0, 600)}`);
    const annotations = Object.values(we.changeAnnotations ?? {});
    assert.ok(annotations.length > 0 && annotations.every((a) => a.needsConfirmation === true), JSON.stringify(we.changeAnnotations));
    assert.match(JSON.stringify(we), /06d/);
    assert.equal(invoice().includes(OLD), true, 'the server wrote the file itself');
});

test('sift.agent.apply refuses when the file changed since the agent read it', async (t) => {
    if (skip) {
        t.skip(skip);
        return;
    }
    const result = await runAgent('2');
    assert.equal(result.files.length, 1);
    const mine = invoice().replace('"""Invoices', '"""My invoices');
    fs.writeFileSync(path.join(root, 'billing', 'invoice.py'), mine);
    let answer: AgentApplyResult | undefined;
    let error: RpcError | undefined;
    try {
        answer = await client.request<AgentApplyResult>('workspace/executeCommand', { command: CMD_AGENT_APPLY, arguments: [{ id: result.id }] });
    } catch (e) {
        error = e as RpcError;
    }
    t.diagnostic(`answer: ${JSON.stringify(answer)} error: ${error?.message}`);
    assert.ok(error !== undefined || answer?.applied === false, 'applied a change over a file changed on disk');
    assert.match(error?.message ?? answer?.failureReason ?? '', /changed/);
    assert.equal(invoice(), mine);
});

test('sift.agent.discard forgets the run', async (t) => {
    if (skip) {
        t.skip(skip);
        return;
    }
    const result = await runAgent('3');
    await client.request('workspace/executeCommand', { command: CMD_AGENT_DISCARD, arguments: [{ id: result.id }] });
    let applied: AgentApplyResult | undefined;
    let error: RpcError | undefined;
    try {
        applied = await client.request<AgentApplyResult>('workspace/executeCommand', { command: CMD_AGENT_APPLY, arguments: [{ id: result.id }] });
    } catch (e) {
        error = e as RpcError;
    }
    assert.ok(error !== undefined || applied?.applied === false, 'a discarded run was applied');
});

test('sift.agent.discard with a reason answers a lesson, which sift.memory.add keeps as a note', async (t) => {
    if (skip) {
        t.skip(skip);
        return;
    }
    // Without a reason (Escape in the input box): refused, no lesson.
    const plain = await runAgent('4');
    const none = await client.request<AgentDiscardResult>('workspace/executeCommand', { command: CMD_AGENT_DISCARD, arguments: [discardArgs(plain.id, '  ')] });
    assert.deepEqual(none, { discarded: true });

    const result = await runAgent('5');
    assert.equal(result.files[0]?.kind, 'modify', 'the lesson needs a change to an existing file');
    const answer = await client.request<AgentDiscardResult>('workspace/executeCommand', {
        command: CMD_AGENT_DISCARD,
        arguments: [discardArgs(result.id, ' the accounting import reads exactly five digits ')],
    });
    t.diagnostic(`discard: ${JSON.stringify(answer)}`);
    assert.equal(answer.discarded, true);
    const lesson = answer.lesson;
    assert.ok(lesson, 'a reason and a modified file: a lesson');
    assert.equal(lesson.uri, pathToFileURL(path.join(root, 'billing', 'invoice.py')).href);
    assert.equal(lesson.title, 'Refused: the accounting import reads exactly five digits');
    assert.match(lesson.text, /was refused: the accounting import reads exactly five digits/);
    const line = invoice().split('\n').findIndex((l) => l.includes(OLD)) + 1;
    assert.deepEqual(lesson.cite, [`billing/invoice.py:${line}-${line}`]);
    // The run is gone: a second discard finds nothing (and proposes nothing).
    const again = await client.request<AgentDiscardResult>('workspace/executeCommand', { command: CMD_AGENT_DISCARD, arguments: [discardArgs(result.id, 'again')] });
    assert.deepEqual(again, { discarded: false });

    // Keep: the lesson, as it came, is sift.memory.add's one argument.
    const args = lessonAddArgs(lesson);
    assert.deepEqual(args, lesson);
    const added = await client.request<MemoryAddResult>('workspace/executeCommand', { command: CMD_MEMORY_ADD, arguments: [args] });
    t.diagnostic(`added: ${JSON.stringify(added)}`);
    assert.deepEqual(added.cites, lesson.cite);
    const note = fs.readFileSync(added.path, 'utf8');
    assert.equal(path.dirname(added.path), path.join(root, '.sift', 'memory'));
    assert.match(note, /title = "Refused: the accounting import reads exactly five digits"/);
    assert.match(note, /was refused: the accounting import reads exactly five digits/);
});

test('$/cancelRequest stops a run', async (t) => {
    if (skip) {
        t.skip(skip);
        return;
    }
    // A second server whose model answers slowly.
    const slow = await fakeModel({ ...SCRIPT, delayMs: 4000 });
    models.push(slow);
    const first = client;
    const dir = fixtureCopy();
    try {
        await startServer(slow.url, dir);
        const id = client.peekId;
        const started = Date.now();
        const pending = client.request<AgentResult>(AGENT_METHOD, { task: 't', workDoneToken: 'w-c', partialResultToken: 'p-c' }, 60000);
        await new Promise((r) => setTimeout(r, 800));
        client.notify('$/cancelRequest', { id });
        try {
            const result = await pending;
            assert.equal(result.stop, 'cancelled');
        } catch (e) {
            assert.equal((e as RpcError).code, -32800, String(e));
        }
        assert.ok(Date.now() - started < 3800, `the run did not stop at once (${Date.now() - started} ms)`);
        assert.equal(await client.close(), 0);
    } finally {
        client = first;
        fs.rmSync(dir, { recursive: true, force: true });
    }
});

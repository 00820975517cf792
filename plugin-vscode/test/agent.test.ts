// The agent's front end: params, how events and results become the view's rows, the diff
// editor's virtual documents, and the messages.

import assert from 'node:assert/strict';
import { test } from 'node:test';

import {
    AgentRun,
    REJECT_REASON_INPUT,
    agentParams,
    appliedMessage,
    diffTitle,
    discardArgs,
    docPath,
    failureText,
    finishedMessage,
    lineDelta,
    parseDocPath,
    attemptPath,
    parseAttemptPath,
    sideText,
    stopWord,
    type Row,
} from '../src/agent';
import { AGENT_STATE_KEY, AGENT_VIEW, COMMANDS, MEMORY_VIEW } from '../src/commands';
import type { AgentFile, AgentResult } from '../src/protocol';
import { readPackageJson } from './paths';

const RETRY_PY = 'import time\n\ndef delay(attempt):\n    return 2 ** attempt\n';
const RETRY_NEW = 'import time\n\ndef delay(attempt):\n    return min(30, 2 ** attempt)\n';

function result(files: AgentFile[], extra: Partial<AgentResult> = {}): AgentResult {
    return {
        id: '1764639000-4242',
        stop: 'done',
        detail: 'the agent finished',
        answer: 'Capped the delay at 30 seconds in core/retry.py.',
        diff: '--- a/core/retry.py\n+++ b/core/retry.py\n@@ -4 +4 @@\n-    return 2 ** attempt\n+    return min(30, 2 ** attempt)\n',
        files,
        rules: [],
        model: 'x',
        ...extra,
    };
}

const modify: AgentFile = { path: 'core/retry.py', uri: 'file:///repo/core/retry.py', kind: 'modify', original: RETRY_PY, proposed: RETRY_NEW };
const create: AgentFile = { path: 'NOTES.md', uri: 'file:///repo/NOTES.md', kind: 'create', original: null, proposed: 'one\ntwo\n' };
const remove: AgentFile = { path: 'old/dead.py', uri: 'file:///repo/old/dead.py', kind: 'delete', original: 'x = 1\n', proposed: null };

function flat(rows: Row[]): Row[] {
    return rows.flatMap((r) => [r, ...flat(r.children ?? [])]);
}

test('agentParams: a trimmed task, the folder, best-of-N and steps only when meaningful', () => {
    assert.equal(agentParams({ task: '   ' }), undefined);
    assert.deepEqual(agentParams({ task: ' cap the delay ' }), { task: 'cap the delay' });
    assert.deepEqual(agentParams({ task: 't', root: 'file:///repo', n: 3, maxSteps: 12.7 }), { task: 't', root: 'file:///repo', n: 3, maxSteps: 12 });
    assert.deepEqual(agentParams({ task: 't', n: 1, maxSteps: 0 }), { task: 't' });
    assert.equal(agentParams({ task: 't', n: 50 })!.n, 8);
});

test('discardArgs: the run id, and the reason trimmed only when there is one', () => {
    assert.deepEqual(discardArgs('1764639000-4242', '  the import reads five digits \n'), { id: '1764639000-4242', reason: 'the import reads five digits' });
    // Escape (undefined), an empty or blank answer, and discards nobody asked a reason for.
    assert.deepEqual(discardArgs('r1', undefined), { id: 'r1' });
    assert.deepEqual(discardArgs('r1', ''), { id: 'r1' });
    assert.deepEqual(discardArgs('r1', ' \t\n '), { id: 'r1' });
    assert.deepEqual(discardArgs('r1', null), { id: 'r1' });
    assert.deepEqual(discardArgs('r1'), { id: 'r1' });
    assert.equal('reason' in discardArgs('r1', '  '), false, 'no empty reason is sent');
    // A reason of several lines is kept whole (the server titles the lesson with its first line).
    assert.deepEqual(discardArgs('r1', 'first\nsecond '), { id: 'r1', reason: 'first\nsecond' });
});

test('the reject reason input box says the reason is optional and how to give none', () => {
    assert.match(REJECT_REASON_INPUT.prompt, /Optional/);
    assert.match(REJECT_REASON_INPUT.prompt, /Escape/);
    assert.match(REJECT_REASON_INPUT.prompt, /without a reason/);
    assert.match(REJECT_REASON_INPUT.placeHolder, /^Optional/);
    assert.equal('ignoreFocusOut' in REJECT_REASON_INPUT, false, 'focus elsewhere is no reason');
});

test('events become steps with their tool calls, each call with its result', () => {
    const run = new AgentRun(1, { task: 'cap the retry delay at 30 seconds' });
    assert.match(run.rows()[0].label, /^Running/);
    assert.equal(run.rows()[0].description, 'cap the retry delay at 30 seconds');
    run.add([{ kind: 'step', step: 1 }, { kind: 'tool', name: 'search', summary: 'query=retry delay' }]);
    assert.equal(run.lastLine(), 'step 1: search query=retry delay');
    run.add([
        { kind: 'result', name: 'search', error: false, firstLine: '8 results (hybrid search):' },
        { kind: 'step', step: 2 },
        { kind: 'tool', name: 'edit', summary: 'path=core/retry.py old_text=1 lines' },
        { kind: 'result', name: 'edit', error: true, firstLine: 'old_text does not occur in core/retry.py' },
        { kind: 'compacted' },
    ]);
    const rows = run.rows();
    const steps = rows.filter((r) => r.label.startsWith('Step '));
    assert.deepEqual(steps.map((s) => s.label), ['Step 1', 'Step 2']);
    assert.equal(steps[0].children![0].label, 'search query=retry delay');
    assert.equal(steps[0].children![0].description, '8 results (hybrid search):');
    assert.equal(steps[0].children![0].icon, 'search');
    assert.equal(steps[1].children![0].icon, 'error', 'a failed call shows as an error');
    assert.equal(steps[1].expanded, true);
    assert.match(steps[1].description!, /conversation compacted/);
    // The work-done message, when the server sends one, wins.
    run.progressMessage = 'step 2: edit path=core/retry.py';
    assert.match(run.rows()[0].label, /Running · step 2: edit path=core\/retry\.py/);
    // Row ids are unique (the tree keeps expansion state by id).
    const ids = flat(rows).map((r) => r.id);
    assert.equal(new Set(ids).size, ids.length);
});

test('what was redacted before sending is listed, and only when something was', () => {
    const run = new AgentRun(5, { task: 't' });
    run.finish(result([modify], {
        model: 'gpt-x',
        redactions: [
            { kind: 'api key', line: 3, preview: 'sk-p… (51 chars)' },
            { kind: 'password', line: 9, preview: 'hunt… (12 chars)' },
        ],
    }));
    const row = run.rows().find((r) => r.id.endsWith('/redactions'))!;
    assert.equal(row.label, 'Redacted before sending');
    assert.equal(row.description, '2 secret-looking strings');
    assert.match(row.tooltip!, /gpt-x/);
    assert.deepEqual(
        row.children!.map((c) => [c.label, c.description]),
        [['api key', 'line 3: sk-p… (51 chars)'], ['password', 'line 9: hunt… (12 chars)']],
    );
    const quiet = new AgentRun(6, { task: 't' });
    quiet.finish(result([modify], { redactions: [] }));
    assert.ok(!quiet.rows().some((r) => r.id.endsWith('/redactions')));
});

test('a result before any step event still has a home', () => {
    const run = new AgentRun(2, { task: 't' });
    run.add([{ kind: 'result', name: 'read', error: false, firstLine: 'core/retry.py (4 lines)' }]);
    assert.equal(run.steps.length, 1);
    assert.equal(run.steps[0].calls[0].name, 'read');
});

test('a finished run lists its answer and proposed files; file rows open the diff', () => {
    const run = new AgentRun(3, { task: 'cap it' });
    run.add([{ kind: 'step', step: 1 }]);
    run.finish(result([modify, create, remove], { rules: ['AGENTS.md'] }));
    assert.equal(run.state, 'proposed');
    const rows = run.rows();
    assert.equal(rows[0].label, 'Done · 3 files to review');
    assert.ok(rows.some((r) => r.contextValue === 'answer' && r.label.startsWith('Capped the delay')));
    const files = rows.find((r) => r.label === 'Proposed change')!;
    assert.equal(files.description, '3 files');
    assert.deepEqual(
        files.children!.map((f) => [f.label, f.description, f.icon, f.contextValue, f.path]),
        [
            ['retry.py', 'core · modified +1 −1', 'diff-modified', 'file', 'core/retry.py'],
            ['NOTES.md', 'new +2 −0', 'diff-added', 'file', 'NOTES.md'],
            ['dead.py', 'old · deleted +0 −1', 'diff-removed', 'file', 'old/dead.py'],
        ],
    );
    assert.ok(rows.some((r) => r.label === 'Rules applied' && r.description === 'AGENTS.md'));
    assert.equal(run.file('NOTES.md'), create);
    run.state = 'applied';
    assert.equal(run.rows().find((r) => r.icon === 'diff')!.label, 'Applied change');
    assert.equal(run.rows()[0].label, 'Applied in the editor');
    run.state = 'discarded';
    assert.equal(run.rows()[0].label, 'Rejected');
    assert.ok(run.rows().some((r) => r.label === 'Rejected change'));
});

test('a run that changed nothing, and best-of-N attempts', () => {
    const run = new AgentRun(4, { task: 'explain' });
    run.finish(result([], { stop: 'max_steps', detail: 'stopped after 30 steps (--max-steps)' }));
    assert.equal(run.state, 'unchanged');
    assert.equal(run.rows()[0].label, 'Stopped at the step limit · no change');
    const best = new AgentRun(5, { task: 't', n: 2 });
    best.finish(
        result([modify], {
            attempts: [
                { index: 1, score: { finished: true, checkerProblems: 0, nested: { a: 1 } }, diff: 'd1' },
                { index: 0, score: { finished: false, checkerProblems: 2 }, diff: 'd0' },
            ],
        }),
    );
    const attempts = best.rows().find((r) => r.label === 'Attempts, best first')!;
    assert.deepEqual(attempts.children!.map((a) => a.label), ['attempt 2 (proposed)', 'attempt 1']);
    assert.equal(attempts.children![0].description, 'finished true, checkerProblems 0');
});

test('a failed run says why', () => {
    const run = new AgentRun(6, { task: 't' });
    run.fail('the model failed: connection refused');
    const rows = run.rows();
    assert.equal(rows[0].label, 'Failed');
    assert.equal(rows[1].label, 'the model failed: connection refused');
    assert.equal(rows[1].icon, 'error');
    const cancelled = new AgentRun(7, { task: 't' });
    cancelled.add([{ kind: 'step', step: 1 }]);
    assert.equal(cancelled.rows()[1].description, '', 'a step waiting for the model');
    cancelled.fail('cancelled');
    assert.deepEqual(cancelled.rows().map((r) => [r.label, r.description]), [['Cancelled', 't'], ['Step 1', 'stopped']]);
});

test('virtual documents: the path round-trips, the file name comes last, sides of new and deleted files are empty', () => {
    const p = docPath(7, 'proposed', 'core/deep/retry.py');
    assert.equal(p, '/7/proposed/core/deep/retry.py');
    assert.deepEqual(parseDocPath(p), { key: 7, side: 'proposed', path: 'core/deep/retry.py' });
    assert.equal(parseDocPath('/whole/7/change.diff'), undefined);
    assert.deepEqual(parseAttemptPath(attemptPath(7, 2)), { key: 7, index: 2 });
    assert.equal(parseAttemptPath(p), undefined);
    assert.equal(sideText(create, 'original'), '');
    assert.equal(sideText(remove, 'proposed'), '');
    assert.equal(sideText(modify, 'proposed'), RETRY_NEW);
    assert.equal(diffTitle(modify), 'retry.py (sift agent: original ↔ proposed)');
    assert.equal(diffTitle(create), 'NOTES.md (sift agent: new file)');
});

test('lineDelta counts added and removed lines', () => {
    assert.equal(lineDelta(modify), '+1 −1');
    assert.equal(lineDelta({ ...modify, original: 'a\nb\n', proposed: 'a\nb\nb\nc' }), '+2 −0');
});

test('messages: finished, applied, failed, cancelled', () => {
    const done = finishedMessage(result([modify]));
    assert.equal(done.text, 'sift agent: done, 1 file changed (core/retry.py).');
    assert.deepEqual(done.buttons, ['Review Diff', 'Accept', 'Reject']);
    assert.equal(done.severity, 'info');
    const stopped = finishedMessage(result([], { stop: 'model_failed', detail: 'the model failed: HTTP 500' }));
    assert.equal(stopped.text, 'sift agent: the model failed, no file changed. the model failed: HTTP 500');
    assert.equal(stopped.severity, 'warning');
    assert.deepEqual(stopped.buttons, ['Retry']);
    assert.equal(stopWord({ stop: 'something_new' }), 'something_new');
    assert.deepEqual(appliedMessage({ applied: true }).ok, true);
    assert.equal(
        appliedMessage({ applied: false, failureReason: 'core/retry.py changed on disk since the agent read it' }).text,
        'sift agent: not applied: core/retry.py changed on disk since the agent read it',
    );
    assert.match(appliedMessage(null).text, /did not apply/);
    assert.deepEqual(failureText({ code: -32800, message: 'cancelled' }), { cancelled: true, text: 'cancelled' });
    assert.match(failureText({ code: -32601, message: 'Method not found' }).text, /no agent yet/);
    assert.deepEqual(failureText(new Error('boom')), { cancelled: false, text: 'boom' });
});

test('package.json: the Sift view container, the Agent and Memory views, menus that name contributed commands', () => {
    const pkg = readPackageJson() as unknown as {
        contributes: {
            commands: { command: string }[];
            viewsContainers: { activitybar: { id: string; icon: string }[] };
            views: Record<string, { id: string }[]>;
            viewsWelcome: { view: string; contents: string }[];
            menus: Record<string, { command: string; when?: string }[]>;
        };
    };
    const c = pkg.contributes;
    assert.equal(c.viewsContainers.activitybar[0].id, 'sift');
    assert.deepEqual(c.views.sift.map((v) => v.id), [AGENT_VIEW, MEMORY_VIEW]);
    assert.ok(c.viewsWelcome.some((w) => w.view === AGENT_VIEW && w.contents.includes(`command:${COMMANDS.askAgent}`)));
    const contributed = new Set(c.commands.map((x) => x.command));
    for (const [menu, items] of Object.entries(c.menus)) {
        for (const item of items) {
            assert.ok(contributed.has(item.command), `${menu}: ${item.command} is not contributed`);
            if (item.when?.includes('sift.agent')) {
                assert.ok(item.when.includes(AGENT_STATE_KEY) || item.when.includes(`view == ${AGENT_VIEW}`), item.when);
            }
        }
    }
    // Accept, Reject and Retry are on the view's title bar.
    const title = c.menus['view/title'].map((m) => m.command);
    for (const cmd of [COMMANDS.acceptAgent, COMMANDS.rejectAgent, COMMANDS.retryAgent, COMMANDS.cancelAgent]) {
        assert.ok(title.includes(cmd), cmd);
    }
});

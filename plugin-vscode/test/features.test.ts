import assert from 'node:assert/strict';
import { test } from 'node:test';

import { FEATURES, advertises, isUnknownCommand, resultMessage, unsupportedMessage } from '../src/features';

const review = FEATURES.find((f) => f.serverCommand === 'sift.review')!;

test('review is a feature that mirrors the server command sift.review', () => {
    assert.ok(review);
    assert.equal(review.command, 'sift.reviewChanges');
    assert.equal(review.showProblems, true);
});

test("sift's and other servers' unknown-command errors are recognised", () => {
    // What sift 0.1 answers (InvalidParams).
    assert.equal(
        isUnknownCommand({ code: -32602, message: 'unknown command "sift.review"; sift knows sift.search, sift.reindex' }),
        true,
    );
    assert.equal(isUnknownCommand({ code: -32601, message: 'Method not found' }), true);
    assert.equal(isUnknownCommand(Object.assign(new Error('Unknown command sift.review'), { code: -32602 })), true);
    // Other failures are not "unsupported".
    assert.equal(isUnknownCommand({ code: -32602, message: 'sift.review takes [uri]' }), false);
    assert.equal(isUnknownCommand({ code: -32603, message: 'internal error: panicked' }), false);
    assert.equal(isUnknownCommand(undefined), false);
    assert.equal(isUnknownCommand('unknown command'), false);
});

test('advertised commands', () => {
    const caps = { executeCommandProvider: { commands: ['sift.search', 'sift.status'] } };
    assert.equal(advertises(caps, 'sift.status'), true);
    assert.equal(advertises(caps, 'sift.review'), false);
    assert.equal(advertises({}, 'sift.review'), undefined);
    assert.equal(advertises(undefined, 'sift.review'), undefined);
});

test('the messages say what to do', () => {
    assert.equal(
        unsupportedMessage(review, '0.1.0'),
        'Your sift server does not support review yet; update sift (this one is 0.1.0).',
    );
    assert.equal(unsupportedMessage(review, undefined), 'Your sift server does not support review yet; update sift.');
    assert.equal(resultMessage(review, { findings: 3 }), 'sift review: 3 findings (in the Problems panel)');
    assert.equal(resultMessage(review, { findings: [{}] }), 'sift review: 1 finding (in the Problems panel)');
    assert.equal(resultMessage(review, { message: 'nothing changed' }), 'sift review: nothing changed');
    assert.equal(resultMessage(review, null), 'sift review: done');
});

import assert from 'node:assert/strict';
import { test } from 'node:test';

import { RestartPolicy } from '../src/restart';

test('restarts up to the limit within the window, then gives up', () => {
    let now = 0;
    const policy = new RestartPolicy(3, 180_000, () => now);
    for (let i = 1; i <= 3; i++) {
        now += 1000;
        const d = policy.onCrash();
        assert.equal(d.restart, true, `crash ${i}`);
        assert.equal(d.crashes, i);
        assert.match(d.message, new RegExp(`restarting it \\(${i} of 3`));
    }
    now += 1000;
    const last = policy.onCrash();
    assert.equal(last.restart, false);
    assert.match(last.message, /4 times in 3 min/);
    assert.match(last.message, /Sift: Restart Server/);
});

test('crashes older than the window are forgotten', () => {
    let now = 0;
    const policy = new RestartPolicy(2, 60_000, () => now);
    assert.equal(policy.onCrash().restart, true);
    now = 10_000;
    assert.equal(policy.onCrash().restart, true);
    now = 65_000; // the first crash left the window
    assert.equal(policy.onCrash().restart, true);
    now = 66_000;
    assert.equal(policy.onCrash().restart, false);
    policy.reset();
    assert.equal(policy.onCrash().restart, true);
});

test('a limit of 0 never restarts and says how to start it again', () => {
    const d = new RestartPolicy(0).onCrash();
    assert.equal(d.restart, false);
    assert.match(d.message, /maxRestarts is 0/);
});

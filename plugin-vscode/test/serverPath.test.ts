import assert from 'node:assert/strict';
import { test } from 'node:test';

import { expandPath, resolveServerPath, type LookupEnv } from '../src/serverPath';

function env(executables: string[], extra: Partial<LookupEnv> = {}): LookupEnv {
    const set = new Set(executables);
    return {
        platform: 'linux',
        env: { PATH: '/usr/local/bin:/usr/bin' },
        homedir: '/home/ann',
        workspaceFolder: '/work/repo',
        isExecutable: (f) => set.has(f),
        ...extra,
    };
}

test('the setting wins over PATH', () => {
    const r = resolveServerPath('/opt/sift/bin/sift', env(['/opt/sift/bin/sift', '/usr/bin/sift']));
    assert.deepEqual(r, { ok: true, path: '/opt/sift/bin/sift', source: 'setting' });
});

test('an empty setting falls back to PATH, in PATH order', () => {
    const r = resolveServerPath('  ', env(['/usr/bin/sift', '/usr/local/bin/sift']));
    assert.deepEqual(r, { ok: true, path: '/usr/local/bin/sift', source: 'PATH' });
});

test('then to ~/.cargo/bin (or $CARGO_HOME/bin)', () => {
    assert.deepEqual(resolveServerPath(undefined, env(['/home/ann/.cargo/bin/sift'])), {
        ok: true,
        path: '/home/ann/.cargo/bin/sift',
        source: 'cargo',
    });
    const custom = env(['/opt/cargo/bin/sift'], { env: { PATH: '/usr/bin', CARGO_HOME: '/opt/cargo' } });
    assert.equal(resolveServerPath('', custom).ok, true);
});

test('a missing binary is explained with the fix', () => {
    const r = resolveServerPath('', env([]));
    assert.equal(r.ok, false);
    if (!r.ok) {
        assert.match(r.message, /not found/);
        assert.match(r.message, /PATH/);
        assert.match(r.fix, /cargo install --path lsp/);
        assert.match(r.fix, /sift\.serverPath/);
    }
});

test('a wrong setting names the path it tried and does not fall back silently', () => {
    const r = resolveServerPath('~/bin/sift', env(['/usr/bin/sift']));
    assert.equal(r.ok, false);
    if (!r.ok) {
        assert.match(r.message, /\/home\/ann\/bin\/sift is not an executable file/);
        assert.match(r.fix, /clear it to use `sift` from PATH/);
    }
});

test('relative settings are relative to the workspace folder; variables expand', () => {
    assert.deepEqual(resolveServerPath('target/release/sift', env(['/work/repo/target/release/sift'])), {
        ok: true,
        path: '/work/repo/target/release/sift',
        source: 'setting',
    });
    const e = env([], { env: { PATH: '', SIFT_HOME: '/opt/s' } });
    assert.equal(expandPath('${env:SIFT_HOME}/sift', e), '/opt/s/sift');
    assert.equal(expandPath('${workspaceFolder}/target/debug/sift', e), '/work/repo/target/debug/sift');
    assert.equal(expandPath('${userHome}/x', e), '/home/ann/x');
    assert.equal(expandPath('~', e), '/home/ann');
});

test('a bare command name in the setting is looked up on PATH', () => {
    assert.deepEqual(resolveServerPath('sift-nightly', env(['/usr/bin/sift-nightly'])), {
        ok: true,
        path: '/usr/bin/sift-nightly',
        source: 'setting',
    });
    assert.equal(resolveServerPath('sift-nightly', env([])).ok, false);
});

test('Windows: sift.exe via PATHEXT and ; separators', () => {
    const e = env(['C:\\tools\\sift.exe'], {
        platform: 'win32',
        env: { Path: 'C:\\Windows;C:\\tools', PATHEXT: '.COM;.EXE' },
        homedir: 'C:\\Users\\ann',
    });
    const r = resolveServerPath('', e);
    assert.deepEqual(r, { ok: true, path: 'C:\\tools\\sift.exe', source: 'PATH' });
});

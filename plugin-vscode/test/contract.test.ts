// The extension mirrors every method and command the server documents (docs/lsp.md), and its
// package.json lists exactly the commands the code registers.

import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { test } from 'node:test';

import { COMMANDS, COMMAND_TITLES } from '../src/commands';
import { FEATURES } from '../src/features';
import { MIRRORED, documentedNames } from '../src/protocol';
import { PLUGIN, readPackageJson, repoFile } from './paths';

test('every sift/… method and sift.… command in docs/lsp.md is mirrored', (t) => {
    const doc = repoFile('docs/lsp.md');
    if (doc === undefined) {
        t.skip('docs/lsp.md is not here (built outside the sift repository)');
        return;
    }
    const documented = documentedNames(doc);
    t.diagnostic(`documented: ${documented.join(', ')}`);
    assert.ok(documented.includes('sift/search'));
    const unmirrored = documented.filter((name) => !(name in MIRRORED));
    assert.deepEqual(unmirrored, [], 'add these to MIRRORED in src/protocol.ts (and mirror them: see src/features.ts)');
});

test('documentedNames finds methods and commands, not files or test hooks', () => {
    const md = '`sift/search` and `sift.search`, `sift.applyFix`, `sift/agent/run`; not `sift.test.panic`, `sift.toml`, `sift lsp`';
    assert.deepEqual(documentedNames(md), ['sift.applyFix', 'sift.search', 'sift/agent/run', 'sift/search']);
});

test('package.json contributes exactly the commands the extension registers', () => {
    const pkg = readPackageJson();
    const contributed = pkg.contributes.commands.map((c) => c.command).sort();
    const registered = [...Object.values(COMMANDS), ...FEATURES.map((f) => f.command)].sort();
    assert.deepEqual(contributed, registered);
    for (const c of pkg.contributes.commands) {
        assert.equal(c.category, 'Sift', c.command);
        const title = COMMAND_TITLES[c.command] ?? FEATURES.find((f) => f.command === c.command)?.title;
        assert.equal(c.title, title, c.command);
    }
    const titles = pkg.contributes.commands.map((c) => `${c.category}: ${c.title}`);
    for (const required of ['Sift: Search Codebase', 'Sift: Reindex', 'Sift: Show Status', 'Sift: Review Changes']) {
        assert.ok(titles.includes(required), required);
    }
});

test('no extension command shares an id with a server command (vscode-languageclient registers those)', () => {
    const pkg = readPackageJson();
    const serverCommands = Object.keys(MIRRORED).filter((n) => n.startsWith('sift.'));
    for (const c of pkg.contributes.commands) {
        assert.ok(!serverCommands.includes(c.command), `${c.command} collides with a server command`);
    }
    const protocolRs = repoFile('lsp/src/server/protocol.rs');
    if (protocolRs !== undefined) {
        const advertised = [...protocolRs.matchAll(/"(sift\.[A-Za-z.]+)"/g)].map((m) => m[1]);
        for (const c of pkg.contributes.commands) {
            assert.ok(!advertised.includes(c.command), `${c.command} collides with a server command`);
        }
    }
});

test('the manifest points at the bundle and activates without a specific file type', () => {
    const pkg = readPackageJson();
    assert.equal(pkg.main, './dist/extension.js');
    assert.deepEqual(pkg.activationEvents, ['onStartupFinished']);
    assert.match(pkg.engines.vscode, /^\^1\.\d+\.0$/);
    const lc = JSON.parse(fs.readFileSync(path.join(PLUGIN, 'node_modules', 'vscode-languageclient', 'package.json'), 'utf8')) as {
        engines: { vscode: string };
    };
    const need = Number(lc.engines.vscode.match(/1\.(\d+)/)![1]);
    const have = Number(pkg.engines.vscode.match(/1\.(\d+)/)![1]);
    assert.ok(have >= need, `vscode-languageclient needs VS Code ${lc.engines.vscode}; engines.vscode is ${pkg.engines.vscode}`);
});

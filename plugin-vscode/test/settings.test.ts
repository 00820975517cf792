import assert from 'node:assert/strict';
import { test } from 'node:test';

import {
    camelToSnake,
    initializationOptions,
    maxRestarts,
    needsRestart,
    searchSettings,
    serverConfigKey,
    serverLaunch,
    snakeToCamel,
    type SettingsSource,
} from '../src/settings';
import { readPackageJson } from './paths';

function source(values: Record<string, unknown>): SettingsSource {
    return { get: <T>(key: string) => values[key] as T | undefined };
}

test('names: camelCase settings mirror snake_case config keys', () => {
    assert.equal(camelToSnake('maxFileSize'), 'max_file_size');
    assert.equal(snakeToCamel('follow_symlinks'), 'followSymlinks');
    assert.deepEqual(serverConfigKey('sift.index.maxFileSize'), { table: 'index', key: 'max_file_size' });
    assert.equal(serverConfigKey('sift.search.maxResults'), undefined);
    assert.equal(serverConfigKey('sift.serverPath'), undefined);
    assert.equal(serverConfigKey('sift.trace.server'), undefined);
});

test('the server runs as `sift lsp --stdio`, with the log file and level when set', () => {
    assert.deepEqual(serverLaunch(source({})), { args: ['lsp', '--stdio'], env: {} });
    assert.deepEqual(serverLaunch(source({ 'server.logFile': '/tmp/sift.log', 'server.logLevel': 'debug' })), {
        args: ['lsp', '--stdio', '--log-file', '/tmp/sift.log'],
        env: { SIFT_LOG: 'debug' },
    });
    assert.deepEqual(serverLaunch(source({ 'server.logLevel': 'bogus' })).env, {});
});

test('initializationOptions carry only the config.toml mirrors that are set, as tables', () => {
    const names = Object.keys(readPackageJson().contributes.configuration.properties);
    assert.deepEqual(initializationOptions(names, source({})), {});
    assert.deepEqual(
        initializationOptions(names, source({ 'index.maxFileSize': '2 MiB', 'index.followSymlinks': false, 'search.maxResults': 7 })),
        { index: { max_file_size: '2 MiB', follow_symlinks: false } },
    );
    assert.deepEqual(initializationOptions(names, source({ 'index.maxFileSize': null, 'index.followSymlinks': true })), {
        index: { follow_symlinks: true },
    });
});

test('search settings and restart limits have sane defaults', () => {
    assert.deepEqual(searchSettings(source({})), { maxResults: 50, mode: 'lexical', maxPerFile: null });
    assert.deepEqual(searchSettings(source({ 'search.mode': 'hybrid', 'search.maxPerFile': 3, 'search.maxResults': 9 })), {
        maxResults: 9,
        mode: 'hybrid',
        maxPerFile: 3,
    });
    assert.equal(maxRestarts(source({})), 5);
    assert.equal(maxRestarts(source({ 'server.maxRestarts': 0 })), 0);
    assert.equal(maxRestarts(source({ 'server.maxRestarts': -2 })), 5);
});

test('which settings restart the server', () => {
    assert.equal(needsRestart('sift.serverPath'), true);
    assert.equal(needsRestart('sift.index.maxFileSize'), true);
    assert.equal(needsRestart('sift.search.maxResults'), false);
});

test('package.json defaults match what the code assumes', () => {
    const props = readPackageJson().contributes.configuration.properties;
    assert.equal(props['sift.search.maxResults'].default, 50);
    assert.equal(props['sift.search.mode'].default, 'lexical');
    assert.equal(props['sift.server.maxRestarts'].default, 5);
    assert.equal(props['sift.server.logLevel'].default, 'warn');
    assert.equal(props['sift.serverPath'].default, '');
    // Paths that start programs or load native code or models, where an API key goes, and what
    // widens the agent's sandbox (or what is recorded) must not come from an untrusted workspace.
    const pkg = readPackageJson() as unknown as { capabilities: { untrustedWorkspaces: { restrictedConfigurations: string[] } } };
    assert.deepEqual(pkg.capabilities.untrustedWorkspaces.restrictedConfigurations.sort(), [
        'sift.agent.checkers',
        'sift.embed.onnxruntime',
        'sift.feedback.text',
        'sift.index.indexSecrets',
        'sift.index.outsideLinks',
        'sift.model.apiKeyEnv',
        'sift.model.baseUrl',
        'sift.model.path',
        'sift.sandbox.allowNet',
        'sift.sandbox.read',
        'sift.sandbox.secretPatterns',
        'sift.sandbox.write',
        'sift.server.logFile',
        'sift.serverPath',
    ]);
});

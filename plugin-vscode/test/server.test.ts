// Drives the real `sift lsp` (target/{release,debug}/sift or $SIFT_BIN) the way the extension
// does, and checks that what the extension reads from it has the shape it expects: sift/search
// results, sift.status coverage, work-done progress, and the answer to an unknown command
// (sift.review). Skipped when no sift binary is found; SIFT_REQUIRE_BINARY=1 makes that a failure.

import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { pathToFileURL } from 'node:url';
import { after, before, test } from 'node:test';

import { FEATURES, advertises, isUnknownCommand, unsupportedMessage } from '../src/features';
import { openTarget, resultRow, searchParams, statusBar } from '../src/present';
import type { SearchResponse, StatusResponse } from '../src/protocol';
import { initializationOptions, serverLaunch } from '../src/settings';
import { LspClient, type RpcError } from './lspClient';
import { fixtureCopy, readPackageJson, siftBinary } from './paths';

const binary = siftBinary();
const skip =
    binary === undefined
        ? process.env.SIFT_REQUIRE_BINARY === '1'
            ? false
            : 'no sift binary (build it, or set SIFT_BIN)'
        : false;

let client: LspClient;
let root: string;
let capabilities: Record<string, unknown>;
let serverInfo: { name: string; version?: string } | undefined;

before(async () => {
    if (skip) {
        return;
    }
    assert.ok(binary, 'SIFT_REQUIRE_BINARY=1 but no sift binary was found');
    root = fixtureCopy();
    const names = Object.keys(readPackageJson().contributes.configuration.properties);
    const launch = serverLaunch({ get: () => undefined });
    client = new LspClient(binary, launch.args, root);
    const init = await client.request<{ capabilities: Record<string, unknown>; serverInfo?: { name: string; version?: string } }>(
        'initialize',
        {
            processId: process.pid,
            rootUri: pathToFileURL(root).href,
            workspaceFolders: [{ uri: pathToFileURL(root).href, name: path.basename(root) }],
            capabilities: { window: { workDoneProgress: true }, general: { positionEncodings: ['utf-16'] } },
            // What the extension sends when the user set the config.toml mirrors.
            initializationOptions: initializationOptions(names, {
                get: <T>(key: string) => ({ 'index.maxFileSize': '2 MiB', 'index.followSymlinks': true })[key] as T,
            }),
        },
    );
    capabilities = init.capabilities;
    serverInfo = init.serverInfo;
    client.notify('initialized', {});
    // Indexing ends with a work-done progress "end".
    await client.until(() =>
        client.notifications.some((n) => n.method === '$/progress' && (n.params as { value: { kind: string } }).value.kind === 'end'),
    );
});

after(async () => {
    if (client) {
        assert.equal(await client.close(), 0);
    }
    if (root) {
        fs.rmSync(root, { recursive: true, force: true });
    }
});

test('indexing reports work-done progress that VS Code can show (begin, report with percentage, end)', { skip }, () => {
    assert.ok(client.serverRequests.some((r) => r.method === 'window/workDoneProgress/create'));
    const values = client.notifications
        .filter((n) => n.method === '$/progress')
        .map((n) => (n.params as { value: { kind: string; title?: string; percentage?: number } }).value);
    assert.equal(values[0].kind, 'begin');
    assert.ok(values[0].title);
    assert.ok(values.some((v) => v.kind === 'report' && typeof v.percentage === 'number'), JSON.stringify(values));
    assert.equal(values.at(-1)!.kind, 'end');
});

test('sift/search answers what the quick pick shows and opens', { skip }, async () => {
    const params = searchParams('invoice total', { maxResults: 20, mode: 'lexical', maxPerFile: null })!;
    const response = await client.request<SearchResponse>('sift/search', params);
    assert.equal(response.mode, 'lexical');
    const best = response.results[0];
    assert.ok(best, 'no result');
    assert.equal(best.path, 'billing/invoice.py');
    assert.equal(best.uri, pathToFileURL(path.join(root, 'billing', 'invoice.py')).href);
    assert.equal(best.symbol, 'compute_invoice_total');
    assert.equal(resultRow(best).label, '$(symbol-function) compute_invoice_total');
    // Each file is one result; the file's other matching chunks come with it.
    assert.equal(new Set(response.results.map((r) => r.path)).size, response.results.length);
    assert.ok((best.more?.length ?? 0) > 0, 'the other chunks of billing/invoice.py');
    assert.ok(best.more!.every((m) => m.score <= best.score && m.range.start.line >= 0 && !('snippet' in m)));
    assert.equal(resultRow(best).description, `billing/invoice.py:13 · +${best.more!.length} more in this file`);
    assert.deepEqual(openTarget(best), { line: 12, revealStart: 12, revealEnd: 15 });
    assert.equal(response.coverage.length, 1);
    assert.equal(response.coverage[0].state, 'ready');
});

test('sift.status feeds the status bar', { skip }, async () => {
    const status = await client.request<StatusResponse>('workspace/executeCommand', { command: 'sift.status', arguments: [] });
    assert.match(status.version, /^\d+\.\d+\.\d+/);
    assert.equal(status.positionEncoding, 'utf-16');
    assert.equal(status.workspaces.length, 1);
    assert.equal(statusBar(status.workspaces).text, '$(check) sift: 6 files');
});

test('sift.reindex schedules an update', { skip }, async () => {
    const answer = await client.request<{ scheduled: number }>('workspace/executeCommand', { command: 'sift.reindex', arguments: [] });
    assert.deepEqual(answer, { scheduled: 1 });
});

test('review: a server without sift.review is recognised and the user told to update', { skip }, async () => {
    const review = FEATURES.find((f) => f.serverCommand === 'sift.review')!;
    if (advertises(capabilities, 'sift.review')) {
        return; // this sift implements review: nothing to check here
    }
    assert.equal(advertises(capabilities, 'sift.status'), true);
    await assert.rejects(
        client.request('workspace/executeCommand', { command: 'sift.review', arguments: [] }),
        (error: RpcError) => {
            assert.equal(isUnknownCommand(error), true, `${error.code} ${error.message}`);
            return true;
        },
    );
    assert.match(unsupportedMessage(review, serverInfo?.version), /does not support review yet.*update sift/);
});

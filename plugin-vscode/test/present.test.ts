import assert from 'node:assert/strict';
import { test } from 'node:test';

import {
    coverageNote,
    isBusy,
    oneLine,
    openTarget,
    resultRow,
    searchParams,
    statusBar,
    statsReport,
    statusReport,
} from '../src/present';
import type { Coverage, SearchResult } from '../src/protocol';

const settings = { maxResults: 50, mode: 'lexical' as const, maxPerFile: null };

function result(extra: Partial<SearchResult> = {}): SearchResult {
    return {
        uri: 'file:///repo/src/config.rs',
        path: 'src/config.rs',
        range: { start: { line: 10, character: 0 }, end: { line: 15, character: 0 } },
        matchLine: 11,
        score: 12.5,
        symbol: 'parse_config',
        kind: 'function',
        container: null,
        language: 'rust',
        snippet: '/// Reads the config file.\npub fn parse_config(path: &str) -> Config {',
        unsaved: false,
        ...extra,
    };
}

test('search params: trimmed query, k clamped to 1..200, mode and maxPerFile passed on', () => {
    assert.deepEqual(searchParams('  parse config ', settings), { query: 'parse config', k: 50, mode: 'lexical' });
    assert.equal(searchParams('', settings), undefined);
    assert.equal(searchParams('  ::  ', settings), undefined);
    assert.equal(searchParams('x', { ...settings, maxResults: 1000 })?.k, 200);
    assert.equal(searchParams('x', { ...settings, maxResults: 0 })?.k, 50);
    assert.deepEqual(searchParams('x', { maxResults: 10, mode: 'hybrid', maxPerFile: 2 }), {
        query: 'x',
        k: 10,
        mode: 'hybrid',
        maxPerFile: 2,
    });
    assert.ok(searchParams('résumé', settings));
});

test('a result row: icon and symbol, path:line (1-based), snippet on one line', () => {
    assert.deepEqual(resultRow(result()), {
        label: '$(symbol-function) parse_config',
        description: 'src/config.rs:12',
        detail: '/// Reads the config file.  ⏎  pub fn parse_config(path: &str) -> Config {',
    });
    const method = resultRow(result({ symbol: 'run', container: 'Server', kind: 'method', unsaved: true }));
    assert.equal(method.label, '$(symbol-method) Server::run');
    assert.equal(method.description, 'src/config.rs:12 (unsaved)');
    const text = resultRow(result({ symbol: null, kind: 'lines', path: 'docs/guide.md', matchLine: 0 }));
    assert.equal(text.label, '$(file-text) guide.md:1');
    assert.equal(resultRow(result({ kind: 'something-new' })).label, '$(symbol-misc) parse_config');
    // Each result is a file: its other matching chunks are counted on its row.
    const grouped = resultRow(result({ more: [result({ matchLine: 40 }), result({ matchLine: 80 })] }));
    assert.equal(grouped.description, 'src/config.rs:12 · +2 more in this file');
    assert.equal(resultRow(result({ more: [] })).description, 'src/config.rs:12');
});

test('long snippets are cut', () => {
    const line = oneLine('x'.repeat(500));
    assert.equal(line.length, 160);
    assert.ok(line.endsWith('…'));
});

test('opening a result: cursor on the match line, the chunk revealed', () => {
    assert.deepEqual(openTarget(result()), { line: 11, revealStart: 10, revealEnd: 14 });
    // A match line outside the chunk (should not happen) is clamped into it.
    assert.equal(openTarget(result({ matchLine: 99 })).line, 14);
    // A one-line chunk at the end of a file without a final newline.
    const last = result({ range: { start: { line: 3, character: 0 }, end: { line: 3, character: 12 } }, matchLine: 3 });
    assert.deepEqual(openTarget(last), { line: 3, revealStart: 3, revealEnd: 3 });
});

const ready: Coverage = { root: '/repo', state: 'ready', filesDone: 3, filesTotal: 3, files: 1234, chunks: 5000 };
const indexing: Coverage = { root: '/other', state: 'indexing', filesDone: 25, filesTotal: 100, files: 20, chunks: 80 };

test('status bar: ready shows the file count, indexing the percentage, failures stand out', () => {
    assert.equal(statusBar([ready]).text, '$(check) sift: 1,234 files');
    assert.match(statusBar([ready]).tooltip, /repo: ready \(1234 files, 5000 chunks\)/);
    const busy = statusBar([ready, indexing]);
    assert.equal(busy.text, '$(sync~spin) sift: indexing 25%');
    assert.equal(busy.severity, 'busy');
    assert.match(busy.tooltip, /other: indexing 25% \(25\/100 files\); searchable now: 20 files, 80 chunks/);
    const failed = statusBar([ready, { root: '/x', state: 'failed', message: 'disk full' }]);
    assert.equal(failed.severity, 'error');
    assert.match(failed.tooltip, /x: indexing failed: disk full/);
    assert.equal(statusBar([{ ...ready, state: 'waiting' }]).text, '$(eye) sift: 1,234 files');
    assert.equal(statusBar([]).text, '$(search) sift');
    assert.equal(statusBar([{ root: '/n', state: 'indexing' }]).text, '$(sync~spin) sift: indexing …');
});

test('busy, coverage notes and the status report', () => {
    assert.equal(isBusy([ready]), false);
    assert.equal(isBusy([ready, indexing]), true);
    assert.equal(coverageNote([ready]), undefined);
    assert.match(coverageNote([ready, indexing]) ?? '', /^other: indexing 25%/);
    const report = statusReport({ version: '0.1.0', workspaces: [ready], positionEncoding: 'utf-16' }, '/usr/bin/sift');
    assert.equal(report, 'sift 0.1.0 (/usr/bin/sift), position encoding utf-16\nrepo: ready (1234 files, 5000 chunks)');
});

test('the stats report names each figure the server sent', () => {
    const none = { shown: 0, accepted: 0, edited: 0, rejected: 0, undecided: 0, acceptance: null };
    const text = statsReport({
        record: { path: '/r/.sift/fates', bytes: 300, events: 2, skipped: 0 },
        stats: {
            events: 2,
            agent: { shown: 4, accepted: 2, edited: 1, rejected: 1, undecided: 0, acceptance: 0.75 },
            notes: none,
            rules: { 'python/mutable-default-arg': { shown: 3, dismissed_wrong: 1, dismissed_noise: 0, fixed: 1, ignored: 1, resolution: 0.5 } },
            retention: { '1d': { runs: 2, mean_percent: 87.5 } },
            automations: { tidy: { shown: 2, accepted: 1, edited: 0, rejected: 0, undecided: 1, acceptance: 0.5 } },
            searches: { lsp: 5, cli: 2 },
        },
        lessons: [{ run: 'r9', uri: 'file:///r/calc.py', cite: ['calc.py:3-5'], text: 't', title: 'Replaced: the agent\'s change to calc.py' }],
    });
    assert.match(text, /agent runs: 4 shown, 2 taken, 1 edited, 1 refused, 0 undecided \(75 % taken\)/);
    assert.match(text, /code kept at 1d: 88 % \(2 runs\)/);
    assert.match(text, /rule python\/mutable-default-arg: 3 shown, 1 dismissed, 1 fixed, 1 merged untouched \(resolved 50 %\)/);
    assert.match(text, /automation tidy: 2 delivered, 1 taken \(50 %\)/);
    assert.match(text, /search lists shown: 7/);
    assert.match(text, /lesson proposed from run r9 \(its change was replaced by your own code\): calc.py:3-5/);
    assert.match(text, /the record: \/r\/.sift\/fates \(300 bytes/);
});

// The extension's settings must mirror the server's configuration (.sift/config.toml): every
// documented key has a `sift.<table>.<camelKey>` setting, and no such setting lacks a key.

import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { test } from 'node:test';

import {
    checkSettings,
    missingKeys,
    parseJsonSchema,
    parseReadmeConfig,
    type ServerKey,
    type SettingSchema,
} from '../src/serverConfig';
import { readPackageJson, repoFile, siftBinary } from './paths';

const properties = readPackageJson().contributes.configuration.properties as Record<string, SettingSchema>;

/**
 * The schema from `sift config schema --json`, when this sift has that command (sift 0.1 has
 * not). With SIFT_REQUIRE_BINARY=1 (the repository's test command) the binary must answer.
 */
function schemaFromBinary(): ServerKey[] | undefined {
    const required = process.env.SIFT_REQUIRE_BINARY === '1';
    const bin = siftBinary();
    if (bin === undefined) {
        assert.ok(!required, 'SIFT_REQUIRE_BINARY=1 but no sift binary was found');
        return undefined;
    }
    try {
        const out = execFileSync(bin, ['config', 'schema', '--json'], { timeout: 10000, stdio: ['ignore', 'pipe', 'pipe'] });
        return parseJsonSchema(JSON.parse(out.toString('utf8')));
    } catch (e) {
        // sift 0.1 has no `config` command.
        assert.ok(!required, `SIFT_REQUIRE_BINARY=1 but \`${bin} config schema --json\` failed: ${String(e)}`);
        return undefined;
    }
}

test('settings mirror the configuration the server documents', (t) => {
    const fromBinary = schemaFromBinary();
    const readme = repoFile('docs/configuration.md');
    if (fromBinary === undefined && readme === undefined) {
        t.skip('neither a sift binary with `sift config schema --json` nor the docs/configuration.md of sift is here');
        return;
    }
    const server = fromBinary ?? parseReadmeConfig(readme!);
    t.diagnostic(`server configuration from ${fromBinary ? '`sift config schema --json`' : 'docs/configuration.md'}: ${server.map((k) => `[${k.table}] ${k.key}`).join(', ')}`);
    assert.ok(server.length > 0, 'the server documents no configuration key');
    assert.deepEqual(checkSettings(server, properties), []);
});

test('docs/configuration.md documents every key `sift config schema --json` lists', (t) => {
    const readme = repoFile('docs/configuration.md');
    if (readme === undefined) {
        t.skip('not inside the sift repository');
        return;
    }
    const fromBinary = schemaFromBinary();
    if (fromBinary === undefined) {
        t.skip('no sift binary with `sift config schema --json` (build it, or set SIFT_BIN)');
        return;
    }
    assert.deepEqual(missingKeys(fromBinary, parseReadmeConfig(readme)), [], 'keys of the schema that docs/configuration.md does not document');
});

// ---- the parsers and the check themselves ------------------------------------------------

const README = `
# x

## Configuration: \`.sift/config.toml\`

\`\`\`toml
[index]
max_file_size = "1 MiB"     # or a number of bytes
follow_symlinks = true

[search]
default_k = 10
weight = 0.5
\`\`\`
`;

test('the README parser reads tables, keys, defaults and types', () => {
    assert.deepEqual(parseReadmeConfig(README), [
        { table: 'index', key: 'max_file_size', default: '1 MiB', types: ['string', 'integer'] },
        { table: 'index', key: 'follow_symlinks', default: true, types: ['boolean'] },
        { table: 'search', key: 'default_k', default: 10, types: ['integer'] },
        { table: 'search', key: 'weight', default: 0.5, types: ['float'] },
    ]);
    assert.throws(() => parseReadmeConfig('# nothing here'), /no heading/);
    const unset = parseReadmeConfig('## Configuration: `.sift/config.toml`\n```toml\n[model]\nname = ""   # unset\n```\n');
    assert.deepEqual(unset, [{ table: 'model', key: 'name', types: ['string'] }]);
});

test('the JSON Schema that `sift config schema --json` prints is read', () => {
    const schema = {
        type: 'object',
        properties: {
            index: {
                type: 'object',
                properties: {
                    max_file_size: { type: ['integer', 'string'], default: '1 MiB', description: 'skip larger files' },
                    follow_symlinks: { type: 'boolean', default: true },
                },
            },
        },
    };
    assert.deepEqual(parseJsonSchema(schema), [
        { table: 'index', key: 'max_file_size', types: ['integer', 'string'], default: '1 MiB' },
        { table: 'index', key: 'follow_symlinks', types: ['boolean'], default: true },
    ]);
});

test('drift is reported both ways', () => {
    const server = parseReadmeConfig(README);
    const problems = checkSettings(server, {
        ...properties,
        'sift.index.followSymlinks': { ...properties['sift.index.followSymlinks'], default: true },
        'sift.index.bogus': { type: ['string', 'null'], default: null },
    });
    assert.ok(problems.some((p) => /missing setting sift\.search\.defaultK for \[search\] default_k/.test(p)), problems.join('\n'));
    assert.ok(problems.some((p) => /missing setting sift\.search\.weight/.test(p)));
    assert.ok(problems.some((p) => /sift\.index\.followSymlinks must default to null/.test(p)));
    assert.ok(problems.some((p) => /sift\.index\.bogus has no counterpart/.test(p)));
    const wrongType = checkSettings(server.slice(0, 1), {
        'sift.index.maxFileSize': { type: ['string', 'null'], default: null, markdownDescription: '`[index] max_file_size` `1 MiB`' },
    });
    assert.deepEqual(wrongType, [
        'sift.index.maxFileSize must accept integer values like the server\'s [index] max_file_size (its type is ["string","null"])',
    ]);
});

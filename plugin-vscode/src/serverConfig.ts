// The server's configuration (`.sift/config.toml`) as sift documents it, and the check that the
// extension's settings mirror it exactly. Used by the unit tests (test/settings-drift.test.ts);
// pure (no `vscode`).
//
// Sources, best first:
//   1. `sift config schema --json`: the JSON Schema that sift generates from the same
//      descriptors its configuration loader checks values with, which `parseJsonSchema` reads:
//      { properties: { <table>: { properties: { <key>: { type, default, description } } } } }.
//   2. docs/configuration.md's ".sift/config.toml: every key" section, for a sift without that
//      command: its ```toml example lists every key with its default (`parseReadmeConfig`; an
//      empty string documents a key that is unset by default). The drift test also checks that
//      docs/configuration.md lists every key of the schema.

import { snakeToCamel, serverConfigKey } from './settings';

export type TomlType = 'string' | 'integer' | 'float' | 'boolean' | 'array';

export interface ServerKey {
    table: string;
    key: string;
    /** The documented default (absent when the source does not say). */
    default?: string | number | boolean;
    /** Types the value may take. */
    types: TomlType[];
    /** `false`: a key only CI reads (the pull-request bot's), which has no editor setting. */
    editor?: false;
}

function tomlScalar(text: string): { value: string | number | boolean; type: TomlType } | undefined {
    const t = text.trim();
    let m: RegExpMatchArray | null;
    if ((m = t.match(/^"((?:[^"\\]|\\.)*)"/))) {
        return { value: JSON.parse(`"${m[1]}"`) as string, type: 'string' };
    }
    if ((m = t.match(/^'([^']*)'/))) {
        return { value: m[1], type: 'string' };
    }
    if ((m = t.match(/^\[[^\]]*\]/))) {
        // An array of strings: its items are not a default a description can quote.
        return { value: m[0], type: 'array' };
    }
    if ((m = t.match(/^(true|false)\b/))) {
        return { value: m[1] === 'true', type: 'boolean' };
    }
    if ((m = t.match(/^[+-]?\d[\d_]*(?![.\deE])/))) {
        return { value: Number(m[0].replace(/_/g, '')), type: 'integer' };
    }
    if ((m = t.match(/^[+-]?\d[\d_]*(\.\d+)?([eE][+-]?\d+)?/))) {
        return { value: Number(m[0].replace(/_/g, '')), type: 'float' };
    }
    return undefined;
}

/**
 * Reads the keys of the first ```toml block after the (docs/configuration.md) heading that names
 * `.sift/config.toml`. A trailing comment "# or a number of bytes" adds the integer type.
 */
export function parseReadmeConfig(markdown: string): ServerKey[] {
    const lines = markdown.split('\n');
    const heading = lines.findIndex((l) => /^#{1,6} .*\.sift\/config\.toml/.test(l));
    if (heading < 0) {
        throw new Error('the document has no heading that names .sift/config.toml');
    }
    const open = lines.findIndex((l, i) => i > heading && /^```toml\s*$/.test(l));
    if (open < 0) {
        throw new Error('the section on .sift/config.toml has no ```toml example');
    }
    const keys: ServerKey[] = [];
    let table = '';
    let editorTable = true;
    for (let i = open + 1; i < lines.length && !/^```/.test(lines[i]); i++) {
        const line = lines[i].trim();
        let m: RegExpMatchArray | null;
        if ((m = line.match(/^\[([A-Za-z0-9_.-]+)\]/))) {
            table = m[1];
            // The reference marks the tables only CI reads.
            editorTable = !/\(CI only\b/.test(line);
        } else if ((m = line.match(/^([A-Za-z0-9_]+)\s*=\s*(.*)$/))) {
            const scalar = tomlScalar(m[2]);
            if (scalar === undefined) {
                throw new Error(`cannot read the value of ${m[1]} in the configuration reference: ${m[2]}`);
            }
            const types: TomlType[] = [scalar.type];
            const comment = m[2].slice(m[2].indexOf('#') + 1);
            if (m[2].includes('#') && /number of bytes|\bnumber\b|integer/i.test(comment) && !types.includes('integer')) {
                types.push('integer');
            }
            // `key = ""` documents a key that is unset by default.
            const documented = scalar.value !== '' && scalar.type !== 'array';
            keys.push({ table, key: m[1], ...(documented ? { default: scalar.value } : {}), types, ...(editorTable ? {} : { editor: false as const }) });
        }
    }
    return keys;
}

interface SchemaNode {
    type?: string | string[];
    default?: unknown;
    properties?: Record<string, SchemaNode>;
    /** `false`: a table only CI reads (the pull-request bot's), with no editor setting. */
    'x-sift-editor'?: boolean;
}

/** Reads the JSON Schema that `sift config schema --json` prints. */
export function parseJsonSchema(schema: unknown): ServerKey[] {
    const root = schema as SchemaNode;
    const keys: ServerKey[] = [];
    for (const [table, node] of Object.entries(root.properties ?? {})) {
        const editor = node['x-sift-editor'] === false ? { editor: false as const } : {};
        for (const [key, prop] of Object.entries(node.properties ?? {})) {
            const raw = Array.isArray(prop.type) ? prop.type : prop.type ? [prop.type] : ['string'];
            const types = raw
                .map((t) => (t === 'number' ? 'float' : t))
                .filter((t): t is TomlType => ['string', 'integer', 'float', 'boolean', 'array'].includes(t));
            const d = prop.default;
            keys.push({
                table,
                key,
                types,
                ...(typeof d === 'string' || typeof d === 'number' || typeof d === 'boolean' ? { default: d } : {}),
                ...editor,
            });
        }
    }
    return keys;
}

export interface SettingSchema {
    type?: string | string[];
    default?: unknown;
    description?: string;
    markdownDescription?: string;
}

/** The VS Code setting that mirrors a server key. */
export function settingName(k: ServerKey): string {
    return `sift.${k.table}.${snakeToCamel(k.key)}`;
}

const JSON_TYPES: Record<TomlType, string[]> = {
    string: ['string'],
    integer: ['integer', 'number'],
    float: ['number'],
    boolean: ['boolean'],
    array: ['array'],
};

/**
 * Compares the server's keys with package.json's `contributes.configuration.properties`.
 * Returns the problems (empty when the two agree).
 */
export function checkSettings(server: ServerKey[], properties: Record<string, SettingSchema>): string[] {
    const problems: string[] = [];
    const expected = new Map(server.filter((k) => k.editor !== false).map((k) => [settingName(k), k]));
    for (const [name, k] of expected) {
        const s = properties[name];
        if (s === undefined) {
            problems.push(`missing setting ${name} for [${k.table}] ${k.key} of .sift/config.toml`);
            continue;
        }
        const types = Array.isArray(s.type) ? s.type : s.type ? [s.type] : [];
        for (const t of k.types) {
            if (!JSON_TYPES[t].some((j) => types.includes(j))) {
                problems.push(`${name} must accept ${t} values like the server's [${k.table}] ${k.key} (its type is ${JSON.stringify(s.type)})`);
            }
        }
        if (!types.includes('null') || s.default !== null) {
            problems.push(`${name} must default to null (unset: the repository's .sift/config.toml or the server's default applies)`);
        }
        const text = s.markdownDescription ?? s.description ?? '';
        if (!text.includes(`\`[${k.table}] ${k.key}\``)) {
            problems.push(`${name}'s description must name \`[${k.table}] ${k.key}\``);
        }
        if (k.default !== undefined && !text.includes(`\`${String(k.default)}\``)) {
            problems.push(`${name}'s description must give the server's default \`${String(k.default)}\``);
        }
    }
    for (const name of Object.keys(properties)) {
        if (serverConfigKey(name) !== undefined && !expected.has(name)) {
            problems.push(`setting ${name} has no counterpart in the server's configuration (.sift/config.toml)`);
        }
    }
    return problems;
}

/** Keys in `a` that `b` lacks, as `[table] key`. */
export function missingKeys(a: ServerKey[], b: ServerKey[]): string[] {
    const inB = new Set(b.map((k) => `${k.table}.${k.key}`));
    return a.filter((k) => !inB.has(`${k.table}.${k.key}`)).map((k) => `[${k.table}] ${k.key}`);
}

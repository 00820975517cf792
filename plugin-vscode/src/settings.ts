// The extension's settings and what they turn into: the server's command line and environment,
// and the `initializationOptions` that mirror `.sift/config.toml`. Pure (no `vscode`).
//
// Two kinds of settings live under `sift.`:
//   - the plugin's own (PLUGIN_SECTIONS and PLUGIN_SETTINGS: how to find and run the server, how
//     the search view asks);
//   - mirrors of the server's `.sift/config.toml`: `sift.<table>.<camelCaseKey>` for
//     `[table] snake_case_key`. They default to null (= use the repository's config.toml or the
//     server's default) and are sent, when set, as `initializationOptions.<table>.<snake_key>`.
//     test/settings-drift.test.ts checks them against the server's documented configuration.

import type { SearchSettings } from './present';

/** Settings sections that belong to the plugin, not to the server's config.toml. */
export const PLUGIN_SECTIONS = ['serverPath', 'server', 'trace'];
/** The search view's own settings, in a table the server's configuration also has (`[search]`). */
export const PLUGIN_SETTINGS = ['sift.search.maxResults', 'sift.search.mode', 'sift.search.maxPerFile'];

/** Reads one setting under `sift.` (vscode's WorkspaceConfiguration fits). */
export interface SettingsSource {
    get<T>(key: string): T | undefined;
}

export function camelToSnake(name: string): string {
    return name.replace(/[A-Z]/g, (c) => '_' + c.toLowerCase());
}

export function snakeToCamel(name: string): string {
    return name.replace(/_([a-z0-9])/g, (_, c: string) => c.toUpperCase());
}

/** Splits `sift.index.maxFileSize` into the config.toml table and key, or undefined for a plugin setting. */
export function serverConfigKey(setting: string): { table: string; key: string } | undefined {
    const parts = setting.split('.');
    if (parts.length !== 3 || parts[0] !== 'sift' || PLUGIN_SECTIONS.includes(parts[1]) || PLUGIN_SETTINGS.includes(setting)) {
        return undefined;
    }
    return { table: parts[1], key: camelToSnake(parts[2]) };
}

export interface ServerLaunch {
    args: string[];
    env: Record<string, string>;
}

const LOG_LEVELS = ['error', 'warn', 'info', 'debug', 'trace'];

/** The server's arguments and extra environment. */
export function serverLaunch(src: SettingsSource): ServerLaunch {
    const args = ['lsp', '--stdio'];
    const logFile = (src.get<string>('server.logFile') ?? '').trim();
    if (logFile !== '') {
        args.push('--log-file', logFile);
    }
    const env: Record<string, string> = {};
    const level = src.get<string>('server.logLevel');
    if (level && LOG_LEVELS.includes(level) && level !== 'warn') {
        env.SIFT_LOG = level;
    }
    return { args, env };
}

/** `initializationOptions`: every server-config mirror that is set, as config.toml tables. */
export function initializationOptions(
    settingNames: string[],
    src: SettingsSource,
): Record<string, Record<string, unknown>> {
    const options: Record<string, Record<string, unknown>> = {};
    for (const name of settingNames) {
        const target = serverConfigKey(name);
        if (target === undefined) {
            continue;
        }
        const value = src.get<unknown>(name.slice('sift.'.length));
        if (value === undefined || value === null || value === '') {
            continue;
        }
        (options[target.table] ??= {})[target.key] = value;
    }
    return options;
}

export function searchSettings(src: SettingsSource): SearchSettings {
    const mode = src.get<string>('search.mode') === 'hybrid' ? 'hybrid' : 'lexical';
    const maxPerFile = src.get<number | null>('search.maxPerFile');
    return {
        maxResults: src.get<number>('search.maxResults') ?? 50,
        mode,
        maxPerFile: typeof maxPerFile === 'number' ? maxPerFile : null,
    };
}

export function maxRestarts(src: SettingsSource): number {
    const n = src.get<number>('server.maxRestarts');
    return typeof n === 'number' && n >= 0 ? Math.floor(n) : 5;
}

/** Whether a change to `setting` needs the server restarted. */
export function needsRestart(setting: string): boolean {
    return (
        setting === 'sift.serverPath' ||
        setting === 'sift.server.logFile' ||
        setting === 'sift.server.logLevel' ||
        serverConfigKey(setting) !== undefined
    );
}

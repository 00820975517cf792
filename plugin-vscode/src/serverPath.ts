// Finds the `sift` binary: the `sift.serverPath` setting, then PATH, then cargo's install folder.
// Pure (no `vscode`): the file system and environment come in as arguments, so it is unit-tested.

import * as path from 'node:path';

export interface LookupEnv {
    platform: NodeJS.Platform;
    env: Record<string, string | undefined>;
    homedir: string;
    /** The first workspace folder, for relative paths and `${workspaceFolder}`. */
    workspaceFolder?: string;
    /** Whether `file` exists, is a file and may be executed. */
    isExecutable(file: string): boolean;
}

export type Resolution =
    | { ok: true; path: string; source: 'setting' | 'PATH' | 'cargo' }
    | { ok: false; message: string; fix: string };

/** The name of the binary on this platform. */
export function binaryName(platform: NodeJS.Platform): string {
    return platform === 'win32' ? 'sift.exe' : 'sift';
}

/** Expands `~`, `${userHome}`, `${workspaceFolder}` and `${env:NAME}` in a configured path. */
export function expandPath(value: string, env: LookupEnv): string {
    let out = value.trim();
    out = out.replace(/\$\{env:([A-Za-z_][A-Za-z0-9_]*)\}/g, (_, name: string) => env.env[name] ?? '');
    out = out.replace(/\$\{userHome\}/g, env.homedir);
    if (env.workspaceFolder !== undefined) {
        out = out.replace(/\$\{workspaceFolder\}/g, env.workspaceFolder);
    }
    if (out === '~' || out.startsWith('~/') || out.startsWith('~\\')) {
        out = env.homedir + out.slice(1);
    }
    return out;
}

function pathApi(platform: NodeJS.Platform): path.PlatformPath {
    return platform === 'win32' ? path.win32 : path.posix;
}

/** Candidates for a bare command name on PATH (with PATHEXT on Windows). */
export function searchPath(name: string, env: LookupEnv): string | undefined {
    const api = pathApi(env.platform);
    const raw = env.env.PATH ?? env.env.Path ?? '';
    const dirs = raw.split(env.platform === 'win32' ? ';' : ':').filter((d) => d.length > 0);
    const exts =
        env.platform === 'win32' && api.extname(name) === ''
            ? (env.env.PATHEXT ?? '.EXE;.CMD;.BAT').split(';').filter((e) => e.length > 0)
            : [''];
    for (const dir of dirs) {
        for (const ext of exts) {
            const candidate = api.join(dir, name + ext);
            if (env.isExecutable(candidate)) {
                return candidate;
            }
        }
    }
    return undefined;
}

const INSTALL_FIX =
    'Install sift (from the sift repository: `cargo install --path lsp`, which puts it in ~/.cargo/bin), ' +
    'or set `sift.serverPath` to the sift binary.';

/** Decides which binary to start, or says why there is none and how to fix it. */
export function resolveServerPath(setting: string | undefined, env: LookupEnv): Resolution {
    const api = pathApi(env.platform);
    const configured = (setting ?? '').trim();
    if (configured !== '') {
        const expanded = expandPath(configured, env);
        const bare = !expanded.includes('/') && !(env.platform === 'win32' && expanded.includes('\\'));
        if (bare) {
            const found = searchPath(expanded, env);
            if (found !== undefined) {
                return { ok: true, path: found, source: 'setting' };
            }
            return {
                ok: false,
                message: `sift.serverPath is "${configured}", but no such command is on PATH.`,
                fix: 'Set `sift.serverPath` to the full path of the sift binary, or clear it to use `sift` from PATH.',
            };
        }
        const absolute = api.isAbsolute(expanded)
            ? expanded
            : env.workspaceFolder !== undefined
              ? api.resolve(env.workspaceFolder, expanded)
              : expanded;
        if (env.isExecutable(absolute)) {
            return { ok: true, path: absolute, source: 'setting' };
        }
        return {
            ok: false,
            message: `sift.serverPath is "${configured}", but ${absolute} is not an executable file.`,
            fix: 'Fix `sift.serverPath` (build sift with `cargo build --release -p sift-lsp`; the binary is target/release/sift), or clear it to use `sift` from PATH.',
        };
    }
    const onPath = searchPath(binaryName(env.platform), env);
    if (onPath !== undefined) {
        return { ok: true, path: onPath, source: 'PATH' };
    }
    // Editors started from a desktop launcher often lack ~/.cargo/bin on PATH.
    const cargoHome = env.env.CARGO_HOME ?? api.join(env.homedir, '.cargo');
    const cargo = api.join(cargoHome, 'bin', binaryName(env.platform));
    if (env.isExecutable(cargo)) {
        return { ok: true, path: cargo, source: 'cargo' };
    }
    return {
        ok: false,
        message: `The sift binary was not found: \`sift.serverPath\` is not set, and there is no \`${binaryName(env.platform)}\` on PATH or in ${api.join(cargoHome, 'bin')}.`,
        fix: INSTALL_FIX,
    };
}

// Where the tests find the extension, the sift repository around it and a sift binary.

import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';

/** plugin-vscode/ (tests run from out/test/). */
export const PLUGIN = path.resolve(__dirname, '..', '..');
/** The sift repository (plugin-vscode's parent), when the extension is built inside it. */
export const REPO = path.resolve(PLUGIN, '..');

export function readPackageJson(): {
    contributes: {
        commands: { command: string; title: string; category?: string }[];
        configuration: { properties: Record<string, Record<string, unknown>> };
    };
    activationEvents?: string[];
    main: string;
    engines: Record<string, string>;
} {
    return JSON.parse(fs.readFileSync(path.join(PLUGIN, 'package.json'), 'utf8'));
}

/** A file of the sift repository, or undefined when the extension is built outside it. */
export function repoFile(relative: string): string | undefined {
    const file = path.join(REPO, relative);
    return fs.existsSync(file) ? fs.readFileSync(file, 'utf8') : undefined;
}

/** The sift binary: $SIFT_BIN, else the newer of target/release/sift and target/debug/sift. */
export function siftBinary(): string | undefined {
    if (process.env.SIFT_BIN) {
        return process.env.SIFT_BIN;
    }
    const candidates = ['release', 'debug']
        .map((p) => path.join(REPO, 'target', p, process.platform === 'win32' ? 'sift.exe' : 'sift'))
        .filter((f) => fs.existsSync(f))
        .sort((a, b) => fs.statSync(b).mtimeMs - fs.statSync(a).mtimeMs);
    return candidates[0];
}

/** A fresh copy of the fixture repository in a temporary folder. */
export function fixtureCopy(): string {
    const dir = fs.mkdtempSync(path.join(fs.realpathSync(os.tmpdir()), 'sift-vscode-fixture-'));
    fs.cpSync(path.join(PLUGIN, 'e2e', 'fixture'), dir, { recursive: true });
    return dir;
}

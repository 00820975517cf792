// A fake Zed host for the sift extension: the imports of Zed's extension WIT (since v0.6.0) that
// the extension uses, backed by plain data a test sets up. smoke.mjs drives it.
import { spawnSync } from 'node:child_process';

/** What the current test set up: see `configure`. */
export const state = {
  rootPath: '/nonexistent',
  path: {}, // binary name -> absolute path, for worktree.which
  shellEnv: [],
  lspSettings: {}, // server id -> the JSON object of `lsp.<id>` in Zed's settings
  capabilities: [], // the extension manifest's [[capabilities]]
  commandsRun: [],
};

export function configure(next) {
  Object.assign(state, { path: {}, shellEnv: [], lspSettings: {}, commandsRun: [] }, next);
}

/** The `worktree` resource. */
export class Worktree {
  id() { return 1n; }
  rootPath() { return state.rootPath; }
  readTextFile(path) { return { tag: 'err', val: `not in this fake host: ${path}` }; }
  which(name) { return state.path[name]; }
  shellEnv() { return state.shellEnv; }
}

export class Project { worktreeIds() { return [1n]; } }
export class KeyValueStore { insert() {} }

/** `get-settings`: Zed answers `lsp` with the server's LspSettings as JSON (unset: defaults). */
export function getSettings(location, category, key) {
  if (category !== 'lsp') return { tag: 'err', val: `unsupported settings category ${category}` };
  const s = state.lspSettings[key] ?? {};
  return JSON.stringify({
    binary: s.binary ?? null,
    initialization_options: s.initialization_options ?? null,
    settings: s.settings ?? null,
  });
}

/** Zed's ProcessExecCapability::allows: `*` matches one argument, a final `**` the rest. */
export function allows(capability, command, args) {
  if (capability.kind !== 'process:exec') return false;
  if (capability.command !== command && capability.command !== '*') return false;
  for (let i = 0; i < capability.args.length; i++) {
    const pattern = capability.args[i];
    if (pattern === '**') return true;
    if (i >= args.length) return false;
    if (pattern !== '*' && pattern !== args[i]) return false;
  }
  return capability.args.length >= args.length;
}

/** `zed:extension/process.run-command`, refused unless the manifest grants it, as in Zed. */
export function runCommand(command) {
  state.commandsRun.push(command);
  if (!state.capabilities.some((c) => allows(c, command.command, command.args))) {
    const args = JSON.stringify(command.args);
    return { tag: 'err', val: `capability for process:exec ${command.command} ${args} is not granted` };
  }
  // Zed runs the command with its own environment plus the command's.
  const out = spawnSync(command.command, command.args, {
    env: { ...process.env, ...Object.fromEntries(command.env) },
    maxBuffer: 64 * 1024 * 1024,
  });
  if (out.error) return { tag: 'err', val: String(out.error) };
  return { tag: 'ok', val: { status: out.status ?? undefined, stdout: out.stdout, stderr: out.stderr } };
}

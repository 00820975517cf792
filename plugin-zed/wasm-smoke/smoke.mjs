// Runs the built extension (the wasm32-wasip2 component Zed loads) in Node, with host.js
// standing in for Zed, and checks what Zed would get from it:
//   - extension.toml parses and declares what the code relies on;
//   - language-server-command: `sift lsp` from the worktree's PATH, or the configured binary;
//   - initialization options and workspace configuration pass through;
//   - /sift-search runs `sift search --json` (only as the manifest's capability allows) and
//     formats real results;
//   - /sift-memory runs `sift memory list --json` / `memory search --json` and shows a fresh and
//     a stale note (written with `sift memory add`, then the cited code changed);
//   - /sift-stats runs `sift stats --json` and shows its figures;
//   - the command the extension returns really starts a working language server.
//
//   node smoke.mjs EXTENSION_WASM SIFT_BIN
//
// Prints one line per check, then "wasm smoke: N passed, M failed"; exit status 1 on a failure.
import { spawn, spawnSync } from 'node:child_process';
import { mkdtemp, mkdir, readFile, realpath, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

import { transpile, writeFiles } from '@bytecodealliance/jco-transpile';
import { parse as parseToml } from 'smol-toml';

import * as host from './host.js';

const here = dirname(fileURLToPath(import.meta.url));
let passed = 0;
let failed = 0;
function check(name, ok, detail) {
  if (ok) passed++;
  else failed++;
  const extra = detail === undefined ? '' : `: ${typeof detail === 'string' ? detail : JSON.stringify(detail)}`;
  console.log(`${ok ? 'ok  ' : 'FAIL'} ${name}${extra}`);
}
function errorText(fn) {
  try {
    fn();
    return null;
  } catch (e) {
    return String(e?.payload ?? e?.message ?? e);
  }
}

// --- A tiny LSP client over stdio ----------------------------------------------------------
function startServer(command) {
  const child = spawn(command.command, command.args, {
    env: { ...process.env, ...Object.fromEntries(command.env) },
    stdio: ['pipe', 'pipe', 'inherit'],
  });
  let buffer = Buffer.alloc(0);
  let nextId = 1;
  const pending = new Map();
  const exited = new Promise((res) => child.on('exit', (code, signal) => res({ code, signal })));
  child.stdout.on('data', (chunk) => {
    buffer = Buffer.concat([buffer, chunk]);
    for (;;) {
      const headerEnd = buffer.indexOf('\r\n\r\n');
      if (headerEnd < 0) return;
      const length = Number(/Content-Length: *(\d+)/i.exec(buffer.subarray(0, headerEnd).toString())[1]);
      if (buffer.length < headerEnd + 4 + length) return;
      const message = JSON.parse(buffer.subarray(headerEnd + 4, headerEnd + 4 + length).toString());
      buffer = buffer.subarray(headerEnd + 4 + length);
      if (message.id !== undefined && message.method !== undefined) {
        // A request from the server (progress token, ...): answer it.
        send({ jsonrpc: '2.0', id: message.id, result: null });
      } else if (message.id !== undefined && pending.has(message.id)) {
        pending.get(message.id)(message);
        pending.delete(message.id);
      }
    }
  });
  function send(message) {
    const body = Buffer.from(JSON.stringify(message));
    child.stdin.write(`Content-Length: ${body.length}\r\n\r\n`);
    child.stdin.write(body);
  }
  function request(method, params, timeoutMs = 10000) {
    const id = nextId++;
    return new Promise((res, rej) => {
      const timer = setTimeout(() => rej(new Error(`${method}: no answer in ${timeoutMs} ms`)), timeoutMs);
      pending.set(id, (message) => {
        clearTimeout(timer);
        if (message.error) rej(new Error(`${method}: ${JSON.stringify(message.error)}`));
        else res(message.result);
      });
      send({ jsonrpc: '2.0', id, method, params });
    });
  }
  const notify = (method, params) => send({ jsonrpc: '2.0', method, params });
  return { child, request, notify, exited };
}

async function main() {
  const [wasmArg, siftArg] = process.argv.slice(2);
  if (!wasmArg || !siftArg) throw new Error('usage: node smoke.mjs EXTENSION_WASM SIFT_BIN');
  const wasm = resolve(wasmArg);
  const sift = await realpath(siftArg);

  // --- The manifest -------------------------------------------------------------------------
  const manifest = parseToml(await readFile(join(here, '..', 'extension.toml'), 'utf8'));
  const cargo = parseToml(await readFile(join(here, '..', 'Cargo.toml'), 'utf8'));
  check('extension.toml: id, schema_version 1, version as Cargo.toml',
    manifest.id === 'sift' && manifest.schema_version === 1
      && manifest.version === cargo.package.version,
    { id: manifest.id, schema_version: manifest.schema_version, version: manifest.version });
  const languages = manifest.language_servers?.sift?.languages ?? [];
  const needed = ['Rust', 'Python', 'JavaScript', 'TypeScript', 'TSX', 'Go', 'Java', 'C', 'C++'];
  check('extension.toml: the sift server serves the chunked languages',
    needed.every((l) => languages.includes(l)), languages.join(', '));
  const slash = manifest.slash_commands?.['sift-search'];
  check('extension.toml: /sift-search declared',
    typeof slash?.description === 'string' && slash?.requires_argument === true);
  const capabilities = manifest.capabilities ?? [];

  // --- Load the component as Zed would (imports: host.js; WASI: preview2-shim) ---------------
  const hostUrl = pathToFileURL(join(here, 'host.js')).href;
  const outDir = join(here, 'out');
  await rm(outDir, { recursive: true, force: true });
  const { files } = await transpile(wasm, {
    name: 'extension',
    outDir: `${outDir}/`,
    map: {
      worktree: `${hostUrl}#Worktree`,
      project: `${hostUrl}#Project`,
      'key-value-store': `${hostUrl}#KeyValueStore`,
      'get-settings': `${hostUrl}#getSettings`,
      'zed:extension/process': hostUrl,
    },
  });
  await writeFiles(files);
  process.env.PWD ??= process.cwd(); // the extension's init reads PWD, as under Zed
  const ext = await import(pathToFileURL(join(outDir, 'extension.js')).href);
  ext.initExtension();
  check('component loads and init-extension runs', true);

  // --- A fixture project --------------------------------------------------------------------
  const root = await realpath(await mkdtemp(join(tmpdir(), 'sift-zed-smoke-')));
  try {
    await writeFile(join(root, 'app.py'),
      'def parse_config(path):\n    """Reads the config file at path."""\n    return {}\n');
    await writeFile(join(root, 'util.c'), 'int add_numbers(int a, int b) { return a + b; }\n');
    await mkdir(join(root, 'bin'));
    await symlink(sift, join(root, 'bin', 'sift'));
    const worktree = new host.Worktree();
    const shellEnv = [['HOME', root], ['PATH', process.env.PATH ?? '/usr/bin:/bin']];

    // --- language-server-command ------------------------------------------------------------
    host.configure({ rootPath: root, path: { sift }, shellEnv, capabilities });
    const command = ext.languageServerCommand('sift', worktree);
    check('default command: sift from PATH, args [lsp], shell env',
      command.command === sift && JSON.stringify(command.args) === '["lsp"]'
        && command.env.some(([k, v]) => k === 'HOME' && v === root), command);

    host.configure({ rootPath: root, path: {}, shellEnv, capabilities });
    const missing = errorText(() => ext.languageServerCommand('sift', worktree));
    check('no sift on PATH: a clear error', missing?.includes("not found on the worktree's PATH"),
      missing);

    host.configure({
      rootPath: root, path: {}, shellEnv, capabilities,
      lspSettings: {
        sift: {
          binary: { path: 'bin/sift', arguments: ['lsp', '--stdio'], env: { SIFT_LOG: 'info' } },
          initialization_options: { siftTestHooks: false },
          settings: { search: { k: 30 } },
        },
      },
    });
    const configured = ext.languageServerCommand('sift', worktree);
    check('lsp.sift.binary: relative path, arguments and env',
      configured.command === join(root, 'bin/sift')
        && JSON.stringify(configured.args) === '["lsp","--stdio"]'
        && configured.env.some(([k, v]) => k === 'SIFT_LOG' && v === 'info'), configured);
    const init = ext.languageServerInitializationOptions('sift', worktree);
    check('initialization_options pass through', init === '{"siftTestHooks":false}', init);
    const config = ext.languageServerWorkspaceConfiguration('sift', worktree);
    check('settings pass through as workspace configuration', config === '{"search":{"k":30}}',
      config);

    // --- /sift-search ----------------------------------------------------------------------
    const slashCommand = {
      name: 'sift-search', description: '', tooltipText: '', requiresArgument: true,
    };
    host.configure({ rootPath: root, path: { sift }, shellEnv, capabilities });
    const output = ext.runSlashCommand(slashCommand, ['parse', 'config'], worktree);
    const run = host.state.commandsRun[0];
    check('/sift-search runs `sift search --json --path ROOT ...`',
      run?.command === sift && run.args.slice(0, 4).join(' ') === `search --json --path ${root}`,
      run?.args);
    check('/sift-search output lists app.py parse_config',
      output.text.includes('`app.py:1 parse_config` (function)') && output.text.includes('```python'),
      output.text);
    const section = output.sections[0];
    check('/sift-search sections cover each result',
      output.sections.length >= 1 && section.label === 'app.py:1 parse_config'
        && output.text.slice(section.range.start, section.range.end).startsWith('`app.py:1'),
      output.sections);
    const noWorktree = errorText(() => ext.runSlashCommand(slashCommand, ['x'], undefined));
    check('/sift-search without a worktree: an error', noWorktree?.includes('open project'),
      noWorktree);
    const empty = errorText(() => ext.runSlashCommand(slashCommand, [], worktree));
    check('/sift-search without a query: usage', empty?.includes('usage'), empty);
    host.configure({ rootPath: root, path: { sift }, shellEnv, capabilities: [] });
    const refused = errorText(() => ext.runSlashCommand(slashCommand, ['x'], worktree));
    check('without the manifest capability the host refuses (as Zed does)',
      refused?.includes('not granted'), refused);

    // --- /sift-memory: a fresh note and a stale one, written by the real sift ------------------
    const memorySlash = manifest.slash_commands?.['sift-memory'];
    check('extension.toml: /sift-memory declared (the query is optional)',
      typeof memorySlash?.description === 'string' && memorySlash?.requires_argument === false);
    // The fixture is the shell's HOME here, and sift refuses a home folder as a project root (it
    // holds ~/.ssh): give sift a home of its own, as the agent part below does.
    const memoryHome = await realpath(await mkdtemp(join(tmpdir(), 'sift-zed-smoke-mhome-')));
    const memoryEnv = { HOME: memoryHome, XDG_CONFIG_HOME: join(memoryHome, '.config') };
    const siftRun = (args) => spawnSync(sift, args, { cwd: root, encoding: 'utf8', env: { ...process.env, ...memoryEnv } });
    const added = [
      siftRun(['memory', 'add', '--path', root, '--cite', 'app.py#parse_config', 'parse_config returns an empty dict for a missing file.']),
      siftRun(['memory', 'add', '--path', root, '--cite', 'util.c#add_numbers', 'add_numbers never overflows: callers pass small counts.']),
    ];
    check('sift memory add wrote two notes', added.every((r) => r.status === 0), added.map((r) => r.stderr || r.stdout));
    // The cited code of the second note changes: it is stale now.
    await writeFile(join(root, 'util.c'), 'int add_numbers(int a, int b) { return a + b + 0; }\n');
    const memoryCommand = { name: 'sift-memory', description: '', tooltipText: '', requiresArgument: false };
    const memorySettings = { sift: { binary: { env: memoryEnv } } };
    host.configure({ rootPath: root, path: { sift }, shellEnv, capabilities, lspSettings: memorySettings });
    const listed = ext.runSlashCommand(memoryCommand, [], worktree);
    const listRun = host.state.commandsRun[0];
    check('/sift-memory runs `sift memory list --json --path ROOT`',
      listRun?.command === sift && listRun.args.join(' ') === `memory list --json --path ${root}`, listRun?.args);
    check('/sift-memory lists both notes, the fresh one first, the stale one flagged with the reason',
      listed.text.startsWith('sift memory notes (2 notes, 1 stale):')
        && listed.sections.length === 2
        && listed.sections[0].label.endsWith('(fresh)')
        && listed.sections[1].label.startsWith('⚠ stale: ')
        && /⚠ \*\*stale\*\*: util\.c#add_numbers/.test(listed.text)
        && listed.text.includes('- cites `app.py#parse_config` (fresh)'),
      listed.text);
    host.state.commandsRun.length = 0;
    const searched = ext.runSlashCommand(memoryCommand, ['empty', 'dict'], worktree);
    const searchRun = host.state.commandsRun[0];
    check('/sift-memory QUERY runs `sift memory search --json --path ROOT -k 10 -- QUERY`',
      searchRun?.args.join(' ') === `memory search --json --path ${root} -k 10 -- empty dict`, searchRun?.args);
    check('/sift-memory QUERY finds the note about it',
      searched.text.startsWith('sift memory notes about `empty dict`') && searched.text.includes('parse_config returns an empty dict'),
      searched.text);
    host.configure({ rootPath: root, path: { sift }, shellEnv, lspSettings: memorySettings, capabilities: capabilities.filter((c) => c.args?.[0] !== 'memory') });
    const memoryRefused = errorText(() => ext.runSlashCommand(memoryCommand, [], worktree));
    check('/sift-memory needs its manifest capability', memoryRefused?.includes('not granted'), memoryRefused);

    // --- /sift-stats: the real sift's report of this worktree's record -------------------------
    const statsSlash = manifest.slash_commands?.['sift-stats'];
    check('extension.toml: /sift-stats declared (the period is optional)',
      typeof statsSlash?.description === 'string' && statsSlash?.requires_argument === false);
    const statsCommand = { name: 'sift-stats', description: '', tooltipText: '', requiresArgument: false };
    host.configure({ rootPath: root, path: { sift }, shellEnv, capabilities, lspSettings: memorySettings });
    const stats = ext.runSlashCommand(statsCommand, ['all'], worktree);
    const statsRun = host.state.commandsRun[0];
    check('/sift-stats all runs `sift stats --json --path ROOT --all`',
      statsRun?.args.join(' ') === `stats --json --path ${root} --all`, statsRun?.args);
    check('/sift-stats shows the agent runs and the review rules, each folded, and where the record lives',
      stats.text.startsWith('# sift stats, all: ')
        && stats.sections.map((s) => s.label).join(',') === 'agent runs,review rules'
        && stats.text.includes('.sift/fates'),
      stats.text);
    const badPeriod = errorText(() => ext.runSlashCommand(statsCommand, ['last', 'week'], worktree));
    check('/sift-stats with a period sift cannot read says why', badPeriod?.includes('use a span such as 7d'), badPeriod);
    await rm(memoryHome, { recursive: true, force: true });

    // --- /sift-agent, against a scripted OpenAI-compatible endpoint (another process: the
    // host runs commands with spawnSync, which blocks this one) ------------------------------
    const agentSlash = manifest.slash_commands?.['sift-agent'];
    check('extension.toml: /sift-agent declared',
      typeof agentSlash?.description === 'string' && agentSlash?.requires_argument === true);
    const script = {
      tool: { name: 'edit', arguments: { path: 'app.py', old_text: '    return {}', new_text: '    return {"path": path}' } },
      final: 'Returned the path.',
    };
    let agentHome;
    const fake = spawn(process.execPath, [join(here, '..', '..', 'plugin-vscode', 'e2e', 'fake-openai.mjs'), JSON.stringify(script)],
      { stdio: ['ignore', 'pipe', 'inherit'] });
    try {
      const port = await new Promise((res, rej) => {
        let out = '';
        fake.stdout.on('data', (d) => {
          out += d;
          const m = /listening (\d+)/.exec(out);
          if (m) res(Number(m[1]));
        });
        fake.on('exit', (code) => rej(new Error(`fake-openai exited ${code}`)));
      });
      agentHome = await realpath(await mkdtemp(join(tmpdir(), 'sift-zed-smoke-home-')));
      host.state.commandsRun.length = 0;
      host.configure({
        rootPath: root, path: { sift }, shellEnv, capabilities,
        lspSettings: {
          sift: {
            binary: {
              env: {
                // The fixture is the shell's HOME here; the agent's sandbox refuses a home
                // folder as its root, as it should: give the run a home of its own.
                HOME: agentHome, XDG_CONFIG_HOME: join(agentHome, '.config'), SIFT_MODEL_BACKEND: 'openai',
                SIFT_MODEL_BASE_URL: `http://127.0.0.1:${port}/v1`, SIFT_MODEL_NAME: 'x',
              },
            },
          },
        },
      });
      const agentCommand = { name: 'sift-agent', description: '', tooltipText: '', requiresArgument: true };
      const before = await readFile(join(root, 'app.py'), 'utf8');
      const agentOut = ext.runSlashCommand(agentCommand, ['return', 'the', 'path'], worktree);
      const agentRun = host.state.commandsRun[0];
      check('/sift-agent runs `sift agent --json --path ROOT -- TASK`, never --apply',
        agentRun?.command === sift && agentRun.args.slice(0, 5).join(' ') === `agent --json --path ${root} --`
          && !agentRun.args.includes('--apply'), agentRun?.args);
      check('/sift-agent output: the answer and the diff',
        agentOut.text.includes('Returned the path.') && agentOut.text.includes('```diff\n--- a/app.py')
          && agentOut.text.includes('+    return {"path": path}'), agentOut.text);
      check('/sift-agent output: two folds, the diff one labelled with the file',
        agentOut.sections.length === 2 && agentOut.sections[1].label === 'sift agent diff: app.py', agentOut.sections);
      check('/sift-agent wrote nothing', (await readFile(join(root, 'app.py'), 'utf8')) === before);
      const noTask = errorText(() => ext.runSlashCommand(agentCommand, [], worktree));
      check('/sift-agent without a task: usage', noTask?.includes('usage'), noTask);
    } finally {
      fake.kill();
      if (agentHome) await rm(agentHome, { recursive: true, force: true });
    }

    // --- The returned command starts a working language server ------------------------------
    host.configure({ rootPath: root, path: { sift }, shellEnv, capabilities });
    const server = startServer(ext.languageServerCommand('sift', worktree));
    try {
      const uri = pathToFileURL(root).href;
      const initialized = await server.request('initialize', {
        processId: process.pid,
        rootUri: uri,
        workspaceFolders: [{ uri, name: 'fixture' }],
        capabilities: { window: { workDoneProgress: true } },
        initializationOptions: JSON.parse(init),
      });
      check('server answers initialize',
        initialized?.capabilities?.workspaceSymbolProvider === true, initialized?.capabilities);
      server.notify('initialized', {});
      let status;
      for (let i = 0; i < 300; i++) {
        status = await server.request('workspace/executeCommand', { command: 'sift.status', arguments: [] });
        if (status.workspaces.length && status.workspaces.every((w) => w.state === 'ready')) break;
        await new Promise((r) => setTimeout(r, 100));
      }
      check('server indexes the worktree', status.workspaces.every((w) => w.state === 'ready'),
        status.workspaces);
      const symbols = await server.request('workspace/symbol', { query: 'parse_config' });
      check('workspace/symbol finds parse_config',
        symbols.some((s) => s.name === 'parse_config'), symbols.map((s) => s.name));
      await server.request('shutdown', null);
      server.notify('exit', null);
      const exit = await Promise.race([server.exited, new Promise((r) => setTimeout(() => r(null), 10000))]);
      check('server exits 0 after shutdown/exit', exit?.code === 0, exit);
    } finally {
      server.child.kill();
    }
  } finally {
    await rm(root, { recursive: true, force: true });
  }
}

try {
  await main();
} catch (e) {
  check('run', false, String(e?.stack ?? e));
}
console.log(`wasm smoke: ${passed} passed, ${failed} failed`);
process.exit(failed === 0 && passed > 0 ? 0 : 1);

// The VS Code side: starts `sift lsp` through vscode-languageclient, keeps it running, and wires
// the commands, the search quick pick and the status bar. Logic that does not need `vscode`
// lives in the other modules (unit-tested with node --test).

import * as fs from 'node:fs';
import * as os from 'node:os';
import * as vscode from 'vscode';
import {
    CloseAction,
    ErrorAction,
    ExecuteCommandRequest,
    LanguageClient,
    State,
    type CloseHandlerResult,
    type ErrorHandlerResult,
    type Executable,
    type LanguageClientOptions,
    type NotificationHandler,
    type ProgressType,
} from 'vscode-languageclient/node';

import { AgentController, AGENT_TOKEN_PREFIX } from './agentView';
import { COMMANDS } from './commands';
import { MemoryController } from './memoryView';
import { FEATURES, advertises, isUnknownCommand, resultMessage, unsupportedMessage, type ServerFeature } from './features';
import {
    coverageLine,
    coverageNote,
    isBusy,
    openTarget,
    resultRow,
    searchParams,
    statsReport,
    statusBar,
    statusReport,
} from './present';
import {
    CMD_MEMORY_SHOW,
    CMD_REINDEX,
    CMD_STATUS,
    SEARCH_METHOD,
    STATS_METHOD,
    type Coverage,
    type MemoryListResponse,
    type ReindexResponse,
    type SearchResponse,
    type SearchResult,
    type StatsResponse,
    type StatusResponse,
} from './protocol';
import { RestartPolicy } from './restart';
import { resolveServerPath, type LookupEnv } from './serverPath';
import { initializationOptions, maxRestarts, needsRestart, searchSettings, serverLaunch } from './settings';

const POLL_BUSY_MS = 1000;
const POLL_IDLE_MS = 15000;
const SEARCH_DEBOUNCE_MS = 120;

type WorkDone = { kind: 'begin' | 'report' | 'end'; title?: string; message?: string; percentage?: number };

/**
 * A LanguageClient that also hands work-done progress ($/progress) to the status bar. The
 * built-in ProgressFeature still shows it in VS Code's progress UI (window progress).
 */
class SiftLanguageClient extends LanguageClient {
    public workDone: ((token: string | number, value: WorkDone) => void) | undefined;

    override onProgress<P>(type: ProgressType<P>, token: string | number, handler: NotificationHandler<P>): vscode.Disposable {
        return super.onProgress(type, token, (value: P) => {
            const v = value as unknown as WorkDone;
            if (v && typeof v === 'object' && (v.kind === 'begin' || v.kind === 'report' || v.kind === 'end')) {
                try {
                    this.workDone?.(token, v);
                } catch {
                    // The status bar must never break progress reporting.
                }
            }
            handler(value);
        });
    }
}

interface ResultItem extends vscode.QuickPickItem {
    result?: SearchResult;
}

class Sift implements vscode.Disposable {
    private client: SiftLanguageClient | undefined;
    private starting: Promise<void> | undefined;
    private serverPath = '';
    private readonly output: vscode.LogOutputChannel;
    private readonly item: vscode.StatusBarItem;
    private readonly disposables: vscode.Disposable[] = [];
    private policy: RestartPolicy;
    private pollTimer: NodeJS.Timeout | undefined;
    private progress = new Map<string | number, WorkDone>();
    private coverage: Coverage[] = [];
    private missingMessage: string | undefined;
    /** Set when the server stopped for good (crashed too often): what the status bar says then. */
    private stoppedMessage: string | undefined;
    private clientDisposables: vscode.Disposable[] = [];
    /** The Sift Memory view: told when the server is up and when indexing ends (the notes are checked then). */
    memory: MemoryController | undefined;

    constructor(private readonly context: vscode.ExtensionContext) {
        this.output = vscode.window.createOutputChannel('sift', { log: true });
        this.item = vscode.window.createStatusBarItem('sift.status', vscode.StatusBarAlignment.Right, 100);
        this.item.name = 'sift';
        this.item.command = COMMANDS.status;
        this.setItem('$(sync~spin) sift: starting', 'sift: starting the server', 'busy');
        this.item.show();
        this.policy = new RestartPolicy(maxRestarts(this.config()));
        this.disposables.push(this.output, this.item);
    }

    private config(): vscode.WorkspaceConfiguration {
        return vscode.workspace.getConfiguration('sift');
    }

    private settingNames(): string[] {
        const props = (this.context.extension.packageJSON as { contributes?: { configuration?: { properties?: object } } })
            .contributes?.configuration?.properties;
        return Object.keys(props ?? {});
    }

    private setItem(text: string, tooltip: string, severity: 'ok' | 'busy' | 'warning' | 'error'): void {
        this.item.text = text;
        this.item.tooltip = tooltip;
        this.item.backgroundColor =
            severity === 'error'
                ? new vscode.ThemeColor('statusBarItem.errorBackground')
                : severity === 'warning'
                  ? new vscode.ThemeColor('statusBarItem.warningBackground')
                  : undefined;
    }

    private lookupEnv(): LookupEnv {
        return {
            platform: process.platform,
            env: process.env,
            homedir: os.homedir(),
            workspaceFolder: vscode.workspace.workspaceFolders?.[0]?.uri.fsPath,
            isExecutable: (file) => {
                try {
                    fs.accessSync(file, fs.constants.X_OK);
                    return fs.statSync(file).isFile();
                } catch {
                    return false;
                }
            },
        };
    }

    // ---- the server's life -------------------------------------------------------------

    start(): Promise<void> {
        this.starting ??= this.doStart().finally(() => {
            this.starting = undefined;
        });
        return this.starting;
    }

    private async doStart(): Promise<void> {
        const config = this.config();
        const found = resolveServerPath(config.get<string>('serverPath'), this.lookupEnv());
        if (!found.ok) {
            this.missingMessage = `${found.message} ${found.fix}`;
            this.output.error(this.missingMessage);
            this.setItem('$(error) sift: not found', this.missingMessage, 'error');
            void this.showMissing();
            return;
        }
        this.missingMessage = undefined;
        this.serverPath = found.path;
        const launch = serverLaunch(config);
        const folder = vscode.workspace.workspaceFolders?.[0]?.uri.fsPath;
        const server: Executable = {
            command: found.path,
            args: launch.args,
            options: { env: { ...process.env, ...launch.env }, ...(folder ? { cwd: folder } : {}) },
        };
        this.output.info(`starting ${found.path} ${launch.args.join(' ')} (found via ${found.source})`);
        const clientOptions: LanguageClientOptions = {
            documentSelector: [{ scheme: 'file' }],
            outputChannel: this.output,
            initializationOptions: initializationOptions(this.settingNames(), config),
            errorHandler: {
                error: (_error, _message, count): ErrorHandlerResult => ({
                    action: (count ?? 0) <= 3 ? ErrorAction.Continue : ErrorAction.Shutdown,
                }),
                closed: (): CloseHandlerResult => this.onServerClosed(),
            },
            middleware: {
                // The memory code lens runs sift.memory.show: open the notes it answers.
                executeCommand: async (command, args, next) => {
                    const answer: unknown = await next(command, args);
                    if (command === CMD_MEMORY_SHOW) {
                        void this.memory?.showNotes(answer as MemoryListResponse | undefined);
                    }
                    return answer;
                },
            },
            initializationFailedHandler: (error) => {
                this.output.error(`the sift server failed to initialise: ${String(error)}`);
                return false;
            },
        };
        const client = new SiftLanguageClient('sift', 'sift', server, clientOptions);
        client.workDone = (token, value) => this.onWorkDone(token, value);
        this.client = client;
        this.stoppedMessage = undefined;
        this.clientDisposables.push(
            client.onDidChangeState((e) => {
                if (e.newState === State.Running) {
                    this.schedulePoll(0);
                    this.memory?.scheduleRefresh();
                } else if (e.newState === State.Stopped) {
                    this.progress.clear();
                    if (this.client === client) {
                        if (this.stoppedMessage !== undefined) {
                            this.setItem('$(error) sift: stopped', this.stoppedMessage, 'error');
                        } else {
                            this.setItem('$(circle-slash) sift: stopped', 'The sift server is not running. Click for details.', 'warning');
                        }
                    }
                }
            }),
        );
        this.setItem('$(sync~spin) sift: starting', `sift: starting ${found.path}`, 'busy');
        try {
            await client.start();
        } catch (error) {
            const message = `Cannot start the sift server (${found.path}): ${error instanceof Error ? error.message : String(error)}`;
            this.output.error(message);
            this.setItem('$(error) sift: failed to start', message, 'error');
            void vscode.window.showErrorMessage(message, 'Show Log', 'Open Settings').then((choice) => this.onChoice(choice));
        }
    }

    private onServerClosed(): CloseHandlerResult {
        const decision = this.policy.onCrash();
        if (decision.restart) {
            this.output.warn(decision.message);
            this.setItem('$(sync~spin) sift: restarting', decision.message, 'warning');
            return { action: CloseAction.Restart, message: decision.message, handled: true };
        }
        this.output.error(decision.message);
        this.stoppedMessage = decision.message;
        this.setItem('$(error) sift: stopped', decision.message, 'error');
        void vscode.window
            .showErrorMessage(decision.message, 'Restart Server', 'Show Log')
            .then((choice) => this.onChoice(choice));
        return { action: CloseAction.DoNotRestart, message: decision.message, handled: true };
    }

    async stop(): Promise<void> {
        this.clearPoll();
        const client = this.client;
        this.client = undefined;
        for (const d of this.clientDisposables.splice(0)) {
            d.dispose();
        }
        if (client !== undefined) {
            try {
                await client.stop(5000);
            } catch (error) {
                this.output.warn(`stopping the sift server: ${String(error)}`);
            }
        }
    }

    async restart(): Promise<void> {
        await this.starting?.catch(() => undefined);
        await this.stop();
        this.policy = new RestartPolicy(maxRestarts(this.config()));
        await this.start();
    }

    private async showMissing(): Promise<void> {
        if (this.missingMessage === undefined) {
            return;
        }
        const choice = await vscode.window.showErrorMessage(this.missingMessage, 'Open Settings', 'Retry');
        await this.onChoice(choice);
    }

    private async onChoice(choice: string | undefined): Promise<void> {
        switch (choice) {
            case 'Open Settings':
                await vscode.commands.executeCommand('workbench.action.openSettings', 'sift.serverPath');
                break;
            case 'Retry':
            case 'Restart Server':
                await this.restart();
                break;
            case 'Show Log':
                this.output.show(true);
                break;
            case 'Reindex':
                await this.reindex();
                break;
        }
    }

    /** The running client for other parts of the extension (the agent), as {@link ready}. */
    readyClient(): Promise<LanguageClient | undefined> {
        return this.ready();
    }

    /** The client when it is running, else undefined (nothing is started or reported). */
    runningClient(): LanguageClient | undefined {
        return this.client?.state === State.Running ? this.client : undefined;
    }

    get log(): vscode.LogOutputChannel {
        return this.output;
    }

    /** The running client, starting it when needed; undefined (after telling the user) when there is none. */
    private async ready(): Promise<SiftLanguageClient | undefined> {
        if (this.starting) {
            await this.starting;
        }
        if (this.client === undefined || this.client.state === State.Stopped) {
            if (this.missingMessage === undefined) {
                await this.restart();
            }
        }
        const client = this.client;
        if (client === undefined) {
            await this.showMissing();
            return undefined;
        }
        if (client.state === State.Starting) {
            await client.start().catch(() => undefined);
        }
        if (client.state !== State.Running) {
            void vscode.window
                .showErrorMessage('The sift server is not running.', 'Restart Server', 'Show Log')
                .then((choice) => this.onChoice(choice));
            return undefined;
        }
        return client;
    }

    private execute<R>(client: LanguageClient, command: string, args: unknown[] = [], token?: vscode.CancellationToken): Promise<R> {
        return client.sendRequest(ExecuteCommandRequest.type, { command, arguments: args }, token) as Promise<R>;
    }

    // ---- status bar and progress ---------------------------------------------------------

    private onWorkDone(token: string | number, value: WorkDone): void {
        if (String(token).startsWith(AGENT_TOKEN_PREFIX)) {
            return; // an agent run: its own notification shows it
        }
        if (value.kind === 'end') {
            this.progress.delete(token);
            this.schedulePoll(0);
            this.memory?.scheduleRefresh();
            return;
        }
        const previous = this.progress.get(token);
        this.progress.set(token, { ...previous, ...value });
        const p = this.progress.get(token)!;
        const pct = typeof p.percentage === 'number' ? ` ${Math.round(p.percentage)}%` : '';
        const tooltip = [`sift: ${p.title ?? 'indexing'}${p.message ? ` (${p.message})` : ''}`, ...this.coverage.map(coverageLine)].join('\n');
        this.setItem(`$(sync~spin) sift: indexing${pct}`, tooltip, 'busy');
    }

    private clearPoll(): void {
        if (this.pollTimer !== undefined) {
            clearTimeout(this.pollTimer);
            this.pollTimer = undefined;
        }
    }

    private schedulePoll(delayMs: number): void {
        this.clearPoll();
        this.pollTimer = setTimeout(() => void this.poll(), delayMs);
    }

    private async poll(): Promise<void> {
        this.pollTimer = undefined;
        const client = this.client;
        if (client === undefined || client.state !== State.Running) {
            return;
        }
        try {
            const status = await this.execute<StatusResponse>(client, CMD_STATUS);
            this.coverage = status.workspaces;
            if (this.progress.size === 0 || !isBusy(this.coverage)) {
                const view = statusBar(this.coverage);
                this.setItem(view.text, `${view.tooltip}\nsift ${status.version}: ${this.serverPath}`, view.severity);
            }
        } catch (error) {
            this.output.warn(`sift.status failed: ${String(error)}`);
        }
        if (this.client === client && client.state === State.Running) {
            this.schedulePoll(isBusy(this.coverage) || this.progress.size > 0 ? POLL_BUSY_MS : POLL_IDLE_MS);
        }
    }

    // ---- commands ------------------------------------------------------------------------

    async search(): Promise<void> {
        const client = await this.ready();
        if (client === undefined) {
            return;
        }
        const pick = vscode.window.createQuickPick<ResultItem>();
        pick.title = 'Sift: Search Codebase';
        pick.placeholder = 'Search the codebase: words, identifiers in any spelling, path fragments';
        pick.matchOnDescription = false;
        pick.matchOnDetail = false;
        const selection = vscode.window.activeTextEditor?.selection;
        const selected = selection && !selection.isEmpty && selection.isSingleLine
            ? vscode.window.activeTextEditor?.document.getText(selection)
            : undefined;
        let timer: NodeJS.Timeout | undefined;
        let cancel: vscode.CancellationTokenSource | undefined;
        let generation = 0;
        const run = async (query: string): Promise<void> => {
            cancel?.cancel();
            const mine = ++generation;
            const params = searchParams(query, searchSettings(this.config()));
            if (params === undefined) {
                pick.items = [];
                pick.busy = false;
                return;
            }
            cancel = new vscode.CancellationTokenSource();
            pick.busy = true;
            try {
                const response = (await client.sendRequest(SEARCH_METHOD, params, cancel.token)) as SearchResponse;
                if (mine !== generation) {
                    return;
                }
                const items: ResultItem[] = response.results.map((result) => ({ ...resultRow(result), alwaysShow: true, result }));
                if (items.length === 0) {
                    items.push({ label: `$(info) No results for “${params.query}”`, alwaysShow: true });
                }
                pick.items = items;
                const note = coverageNote(response.coverage);
                pick.title = note ? `Sift: Search Codebase (${note})` : 'Sift: Search Codebase';
            } catch (error) {
                if (mine !== generation || cancel?.token.isCancellationRequested) {
                    return;
                }
                const message = error instanceof Error ? error.message : String(error);
                pick.items = [{ label: `$(error) sift: ${message}`, alwaysShow: true }];
            } finally {
                if (mine === generation) {
                    pick.busy = false;
                }
            }
        };
        pick.onDidChangeValue((value) => {
            if (timer !== undefined) {
                clearTimeout(timer);
            }
            timer = setTimeout(() => void run(value), SEARCH_DEBOUNCE_MS);
        });
        pick.onDidAccept(() => {
            const chosen = pick.activeItems[0]?.result;
            if (chosen === undefined) {
                return;
            }
            pick.hide();
            void this.open(chosen);
        });
        pick.onDidHide(() => {
            if (timer !== undefined) {
                clearTimeout(timer);
            }
            cancel?.cancel();
            pick.dispose();
        });
        pick.show();
        if (selected) {
            pick.value = selected;
            void run(selected);
        }
    }

    private async open(result: SearchResult): Promise<void> {
        const target = openTarget(result);
        const uri = vscode.Uri.parse(result.uri);
        try {
            const document = await vscode.workspace.openTextDocument(uri);
            const line = Math.min(target.line, Math.max(0, document.lineCount - 1));
            const column = document.lineAt(line).firstNonWhitespaceCharacterIndex;
            const editor = await vscode.window.showTextDocument(document, {
                selection: new vscode.Range(line, column, line, column),
                preview: true,
            });
            const chunk = new vscode.Range(target.revealStart, 0, target.revealEnd, 0);
            const visible = editor.visibleRanges[0];
            const height = visible ? visible.end.line - visible.start.line : 0;
            if (height > 0 && target.revealEnd - target.revealStart < height) {
                editor.revealRange(chunk, vscode.TextEditorRevealType.InCenterIfOutsideViewport);
            } else {
                editor.revealRange(new vscode.Range(line, 0, line, 0), vscode.TextEditorRevealType.InCenterIfOutsideViewport);
            }
        } catch (error) {
            void vscode.window.showErrorMessage(`sift: cannot open ${result.path}: ${error instanceof Error ? error.message : String(error)}`);
        }
    }

    async reindex(): Promise<void> {
        const client = await this.ready();
        if (client === undefined) {
            return;
        }
        try {
            const answer = await this.execute<ReindexResponse>(client, CMD_REINDEX);
            const n = answer?.scheduled ?? 0;
            void vscode.window.showInformationMessage(
                n === 0 ? 'sift: no workspace folder to reindex.' : `sift: updating the index of ${n} workspace folder${n === 1 ? '' : 's'}.`,
            );
            this.schedulePoll(200);
        } catch (error) {
            void vscode.window.showErrorMessage(`sift: reindex failed: ${error instanceof Error ? error.message : String(error)}`);
        }
    }

    async showStatus(): Promise<void> {
        if (this.missingMessage !== undefined && this.client === undefined) {
            await this.showMissing();
            return;
        }
        const client = await this.ready();
        if (client === undefined) {
            return;
        }
        try {
            const status = await this.execute<StatusResponse>(client, CMD_STATUS);
            this.coverage = status.workspaces;
            const report = statusReport(status, this.serverPath);
            this.output.info(report);
            const choice = await vscode.window.showInformationMessage(report.split('\n').join(' · '), 'Reindex', 'Show Log');
            await this.onChoice(choice);
        } catch (error) {
            void vscode.window.showErrorMessage(`sift: status failed: ${error instanceof Error ? error.message : String(error)}`);
        }
    }

    /**
     * The figures of the last 30 days (`sift/stats`), in the output channel; each lesson it
     * proposes (an accepted run the user replaced) is offered with Keep, one after the other.
     */
    async showStats(): Promise<void> {
        const client = await this.ready();
        if (client === undefined) {
            return;
        }
        try {
            const stats = (await client.sendRequest(STATS_METHOD, {})) as StatsResponse;
            this.output.info(statsReport(stats));
            this.output.show(true);
            void (async () => {
                for (const lesson of stats.lessons ?? []) {
                    await this.memory?.offerLesson(lesson);
                }
            })();
        } catch (error) {
            void vscode.window.showErrorMessage(`sift: stats failed: ${error instanceof Error ? error.message : String(error)}`);
        }
    }

    /** Runs a server-side feature (review; later agent, memory) and says clearly when the server lacks it. */
    async runFeature(feature: ServerFeature): Promise<void> {
        const client = await this.ready();
        if (client === undefined) {
            return;
        }
        const version = client.initializeResult?.serverInfo?.version;
        const advertised = advertises(client.initializeResult?.capabilities, feature.serverCommand);
        this.output.info(`${feature.serverCommand}: the server ${advertised === false ? 'does not advertise it; trying anyway' : 'advertises it'}`);
        let result: unknown;
        try {
            result = await vscode.window.withProgress(
                { location: vscode.ProgressLocation.Notification, title: `sift: ${feature.noun}…` },
                () => this.execute<unknown>(client, feature.serverCommand, []),
            );
        } catch (error) {
            if (isUnknownCommand(error)) {
                const message = unsupportedMessage(feature, version);
                this.output.warn(`${message} (server said: ${error instanceof Error ? error.message : String(error)})`);
                // With a button the toast shows the whole message, not its first line.
                void vscode.window.showWarningMessage(message, 'Show Log').then((choice) => this.onChoice(choice));
                return;
            }
            void vscode.window.showErrorMessage(`sift ${feature.noun} failed: ${error instanceof Error ? error.message : String(error)}`);
            return;
        }
        if (feature.showProblems) {
            await vscode.commands.executeCommand('workbench.actions.view.problems');
        }
        void vscode.window.showInformationMessage(resultMessage(feature, result));
    }

    showLog(): void {
        this.output.show(true);
    }

    /** Settings whose change restarts the server. */
    restartSettings(): string[] {
        return ['sift.server.maxRestarts', ...this.settingNames().filter(needsRestart)];
    }

    dispose(): void {
        this.clearPoll();
        for (const d of [...this.clientDisposables, ...this.disposables]) {
            d.dispose();
        }
    }
}

let sift: Sift | undefined;

export function activate(context: vscode.ExtensionContext): void {
    const s = new Sift(context);
    sift = s;
    const memory = new MemoryController(() => s.readyClient(), () => s.runningClient(), s.log);
    s.memory = memory;
    context.subscriptions.push(
        memory,
        s,
        vscode.commands.registerCommand(COMMANDS.search, () => s.search()),
        vscode.commands.registerCommand(COMMANDS.reindex, () => s.reindex()),
        vscode.commands.registerCommand(COMMANDS.status, () => s.showStatus()),
        vscode.commands.registerCommand(COMMANDS.stats, () => s.showStats()),
        vscode.commands.registerCommand(COMMANDS.restart, () => s.restart()),
        vscode.commands.registerCommand(COMMANDS.showLog, () => s.showLog()),
        ...FEATURES.map((f) => vscode.commands.registerCommand(f.command, () => s.runFeature(f))),
        new AgentController(() => s.readyClient(), s.log, memory),
        vscode.workspace.onDidChangeConfiguration((e) => {
            const affected = s.restartSettings().filter((name) => e.affectsConfiguration(name));
            if (affected.length > 0) {
                void s.restart();
            }
        }),
        // sift takes its roots at initialisation: a changed set of folders needs a new server.
        vscode.workspace.onDidChangeWorkspaceFolders(() => void s.restart()),
    );
    void s.start();
}

export async function deactivate(): Promise<void> {
    await sift?.stop();
    sift = undefined;
}

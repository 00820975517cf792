// The agent in VS Code: *Sift: Ask Agent* sends `sift/agent` with a cancellable progress
// notification, the Sift Agent view lists the steps as they arrive (partial results) and then the
// proposed files, a file opens VS Code's diff editor (two virtual documents), and Accept / Reject /
// Retry run `sift.agent.apply`, `sift.agent.discard` or the same task again. Reject then asks for
// an optional reason, sent with the discard; a lesson in the answer is offered as a memory note.
// Everything the agent does happens in the server; what is shown comes from src/agent.ts.

import * as vscode from 'vscode';
import { ExecuteCommandRequest, ProgressType, WorkDoneProgress, type LanguageClient, type WorkDoneProgressReport } from 'vscode-languageclient/node';

import {
    AgentRun,
    DOC_SCHEME,
    REJECT_REASON_INPUT,
    agentParams,
    appliedMessage,
    attemptPath,
    parseAttemptPath,
    diffTitle,
    discardArgs,
    docPath,
    failureText,
    finishedMessage,
    parseDocPath,
    sideText,
    type AgentRequest,
    type Row,
} from './agent';
import { AGENT_STATE_KEY, AGENT_VIEW, COMMANDS } from './commands';
import type { MemoryController } from './memoryView';
import {
    AGENT_METHOD,
    CMD_AGENT_APPLY,
    CMD_AGENT_DISCARD,
    type AgentApplyResult,
    type AgentDiscardArgs,
    type AgentDiscardResult,
    type AgentPartial,
    type AgentResult,
} from './protocol';

/** The progress tokens of agent runs start with this (the status bar ignores them). */
export const AGENT_TOKEN_PREFIX = 'sift-agent-';

const partialType = new ProgressType<AgentPartial>();

const CONFIRM_HINT = 'sift agent: confirm the change in Refactor Preview (tick the files, then Apply).';

export class AgentController implements vscode.TreeDataProvider<Row>, vscode.TextDocumentContentProvider, vscode.Disposable {
    private run: AgentRun | undefined;
    private nextKey = 1;
    private cancel: vscode.CancellationTokenSource | undefined;
    private readonly changed = new vscode.EventEmitter<Row | undefined>();
    readonly onDidChangeTreeData = this.changed.event;
    private readonly docsChanged = new vscode.EventEmitter<vscode.Uri>();
    readonly onDidChange = this.docsChanged.event;
    private readonly view: vscode.TreeView<Row>;
    private readonly disposables: vscode.Disposable[] = [];

    constructor(
        private readonly client: () => Promise<LanguageClient | undefined>,
        private readonly output: vscode.LogOutputChannel,
        private readonly memory: MemoryController,
    ) {
        this.view = vscode.window.createTreeView(AGENT_VIEW, { treeDataProvider: this, showCollapseAll: true });
        this.disposables.push(
            this.view,
            this.changed,
            this.docsChanged,
            vscode.workspace.registerTextDocumentContentProvider(DOC_SCHEME, this),
            vscode.commands.registerCommand(COMMANDS.askAgent, (arg?: Partial<AgentRequest> | string) => this.ask(arg)),
            vscode.commands.registerCommand(COMMANDS.askAgentBestOf, () => this.askBestOf()),
            vscode.commands.registerCommand(COMMANDS.acceptAgent, () => this.accept()),
            vscode.commands.registerCommand(COMMANDS.rejectAgent, () => this.reject()),
            vscode.commands.registerCommand(COMMANDS.retryAgent, () => this.retry()),
            vscode.commands.registerCommand(COMMANDS.cancelAgent, () => this.cancel?.cancel()),
            vscode.commands.registerCommand(COMMANDS.openAgentDiff, (row?: Row | string) => this.openDiff(row)),
            vscode.commands.registerCommand(COMMANDS.showAgentDiff, () => this.showWholeDiff()),
            vscode.commands.registerCommand(COMMANDS.rememberAgentNote, (row?: Row) => this.remember(row)),
        );
        void this.setState();
    }

    // ---- the view ----------------------------------------------------------------------------

    getChildren(row?: Row): Row[] {
        if (row) {
            return row.children ?? [];
        }
        return this.run?.rows() ?? [];
    }

    getTreeItem(row: Row): vscode.TreeItem {
        const collapsible =
            row.children === undefined || row.children.length === 0
                ? vscode.TreeItemCollapsibleState.None
                : row.expanded
                  ? vscode.TreeItemCollapsibleState.Expanded
                  : vscode.TreeItemCollapsibleState.Collapsed;
        const item = new vscode.TreeItem(row.label, collapsible);
        item.id = row.id;
        item.description = row.description;
        item.tooltip = row.tooltip;
        item.iconPath = new vscode.ThemeIcon(row.icon, row.color ? new vscode.ThemeColor(row.color) : undefined);
        item.contextValue = row.contextValue;
        if (row.contextValue === 'file' && row.path !== undefined) {
            item.command = { command: COMMANDS.openAgentDiff, title: 'Open Agent Diff', arguments: [row.path] };
        } else if (row.contextValue === 'attempt' && row.attempt !== undefined) {
            item.command = { command: COMMANDS.openAgentDiff, title: 'Open Agent Diff', arguments: [{ attempt: row.attempt }] };
        } else if (row.contextValue === 'answer') {
            item.command = { command: COMMANDS.showAgentDiff, title: 'Show Agent Change as a Diff' };
        }
        return item;
    }

    private refresh(): void {
        this.changed.fire(undefined);
        void this.setState();
    }

    private async setState(): Promise<void> {
        this.view.message = this.run?.state === 'running' ? 'The agent is working…' : undefined;
        await vscode.commands.executeCommand('setContext', AGENT_STATE_KEY, this.run?.state ?? 'none');
    }

    // ---- the diff editor's two sides -------------------------------------------------------

    provideTextDocumentContent(uri: vscode.Uri): string {
        if (uri.path.startsWith('/whole/')) {
            return this.run?.result?.diff ?? '';
        }
        const attempt = parseAttemptPath(uri.path);
        if (attempt !== undefined) {
            const a = this.run?.key === attempt.key ? this.run.result?.attempts?.find((x) => x.index === attempt.index) : undefined;
            return a ? `${a.answer ? `# ${a.answer.split('\n')[0]}\n` : ''}${a.diff || '# no change\n'}` : '';
        }
        const at = parseDocPath(uri.path);
        if (at === undefined || this.run === undefined || this.run.key !== at.key) {
            return '';
        }
        const file = this.run.file(at.path);
        return file ? sideText(file, at.side) : '';
    }

    private async openDiff(row?: Row | string | { attempt: number }): Promise<void> {
        const run = this.run;
        if (typeof row === 'object' && row !== null && 'attempt' in row && typeof row.attempt === 'number' && run) {
            const doc = await vscode.workspace.openTextDocument(vscode.Uri.from({ scheme: DOC_SCHEME, path: attemptPath(run.key, row.attempt) }));
            await vscode.languages.setTextDocumentLanguage(doc, 'diff');
            await vscode.window.showTextDocument(doc, { preview: true });
            return;
        }
        const path = typeof row === 'string' ? row : (row as Row | undefined)?.path ?? this.run?.result?.files[0]?.path;
        const file = path === undefined ? undefined : run?.file(path);
        if (run === undefined || file === undefined) {
            void vscode.window.showInformationMessage('sift agent: no proposed change to show.');
            return;
        }
        const side = (s: 'original' | 'proposed') => vscode.Uri.from({ scheme: DOC_SCHEME, path: docPath(run.key, s, file.path) });
        await vscode.commands.executeCommand('vscode.diff', side('original'), side('proposed'), diffTitle(file), { preview: true });
    }

    private async showWholeDiff(): Promise<void> {
        const run = this.run;
        if (run?.result === undefined) {
            return;
        }
        if (run.result.files.length === 0) {
            void vscode.window.showInformationMessage(`sift agent: ${run.result.answer.trim() || 'no change'}`);
            return;
        }
        const uri = vscode.Uri.from({ scheme: DOC_SCHEME, path: `/whole/${run.key}/change.diff` });
        const doc = await vscode.workspace.openTextDocument(uri);
        await vscode.languages.setTextDocumentLanguage(doc, 'diff');
        await vscode.window.showTextDocument(doc, { preview: true });
    }

    // ---- runs ------------------------------------------------------------------------------

    private async ask(arg?: Partial<AgentRequest> | string): Promise<void> {
        let request: AgentRequest | undefined;
        if (typeof arg === 'string') {
            request = { task: arg };
        } else if (arg && typeof arg.task === 'string') {
            request = { task: arg.task, root: arg.root, n: arg.n, maxSteps: arg.maxSteps };
        } else {
            const task = await vscode.window.showInputBox({
                title: 'Sift: Ask Agent',
                prompt: 'What should the agent do? It proposes a change; nothing is written until you accept it.',
                placeHolder: 'e.g. cap the retry delay at 30 seconds',
                value: this.run?.request.task,
                ignoreFocusOut: true,
            });
            if (task === undefined) {
                return;
            }
            request = { task };
        }
        await this.start(request);
    }

    /** Best-of-N: the server runs N attempts and proposes the best-ranked one. */
    private async askBestOf(): Promise<void> {
        const pick = await vscode.window.showQuickPick(
            ['2', '3', '4', '6', '8'].map((n) => ({ label: n, description: `${n} attempts, the best-ranked proposed` })),
            { title: 'Sift: Ask Agent (Best of N)', placeHolder: 'How many attempts?' },
        );
        if (pick === undefined) {
            return;
        }
        const task = await vscode.window.showInputBox({
            title: `Sift: Ask Agent (best of ${pick.label})`,
            prompt: 'What should the agent do? It proposes a change; nothing is written until you accept it.',
            value: this.run?.request.task,
            ignoreFocusOut: true,
        });
        if (task !== undefined) {
            await this.start({ task, n: Number(pick.label) });
        }
    }

    private async retry(): Promise<void> {
        if (this.run === undefined) {
            await this.ask();
            return;
        }
        await this.start(this.run.request);
    }

    private async start(request: AgentRequest): Promise<void> {
        const params = agentParams(request);
        if (params === undefined) {
            void vscode.window.showWarningMessage('sift agent: say what the agent should do.');
            return;
        }
        if (this.run?.state === 'running') {
            void vscode.window.showWarningMessage('sift agent: a run is going on; cancel it first.');
            return;
        }
        const client = await this.client();
        if (client === undefined) {
            return;
        }
        await this.forgetProposal(client);
        if (params.root === undefined && vscode.workspace.workspaceFolders?.length) {
            params.root = vscode.workspace.workspaceFolders[0].uri.toString();
        }
        const run = new AgentRun(this.nextKey++, request);
        run.root = params.root;
        this.run = run;
        this.refresh();
        await vscode.commands.executeCommand(`${AGENT_VIEW}.focus`);
        const workDoneToken = `${AGENT_TOKEN_PREFIX}${run.key}-work-${Date.now()}`;
        const partialResultToken = `${AGENT_TOKEN_PREFIX}${run.key}-partial-${Date.now()}`;
        this.output.info(`sift/agent: ${params.task}`);
        const result = await vscode.window.withProgress(
            { location: vscode.ProgressLocation.Notification, title: 'sift agent', cancellable: true },
            async (progress, token) => {
                this.cancel = new vscode.CancellationTokenSource();
                const cancel = this.cancel;
                token.onCancellationRequested(() => cancel.cancel());
                progress.report({ message: 'starting…' });
                const listeners = [
                    client.onProgress(WorkDoneProgress.type, workDoneToken, (value) => {
                        if (value.kind !== 'end' && (value as WorkDoneProgressReport).message) {
                            run.progressMessage = (value as WorkDoneProgressReport).message;
                            progress.report({ message: run.progressMessage });
                            this.refresh();
                        }
                    }),
                    client.onProgress(partialType, partialResultToken, (value) => {
                        run.add(value?.events ?? []);
                        if (run.progressMessage === undefined) {
                            progress.report({ message: run.lastLine() });
                        }
                        this.refresh();
                    }),
                ];
                try {
                    return (await client.sendRequest(AGENT_METHOD, { ...params, workDoneToken, partialResultToken }, cancel.token)) as
                        | AgentResult
                        | null
                        | undefined;
                } catch (error) {
                    const failure = failureText(error);
                    if (failure.cancelled) {
                        return undefined;
                    }
                    run.fail(failure.text);
                    return undefined;
                } finally {
                    for (const l of listeners) {
                        l.dispose();
                    }
                    cancel.dispose();
                    if (this.cancel === cancel) {
                        this.cancel = undefined;
                    }
                }
            },
        );
        run.progressMessage = undefined;
        if (run.state === 'failed') {
            this.refresh();
            this.output.error(`sift/agent failed: ${run.error}`);
            void vscode.window.showErrorMessage(`sift agent failed: ${run.error}`, 'Retry', 'Show Log').then((choice) => {
                if (choice === 'Retry') {
                    void this.retry();
                } else if (choice === 'Show Log') {
                    this.output.show(true);
                }
            });
            return;
        }
        if (result === undefined || result === null) {
            run.fail('cancelled');
            this.refresh();
            return;
        }
        run.finish(result);
        this.refresh();
        this.output.info(`sift/agent: run ${result.id} ${result.stop}: ${result.detail}; ${result.files.length} files`);
        const message = finishedMessage(result);
        const show = message.severity === 'info' ? vscode.window.showInformationMessage : vscode.window.showWarningMessage;
        if (result.files.length > 0) {
            // The first file's diff at once: that is what the user wants to look at.
            await this.openDiff(result.files[0].path);
        }
        void show(message.text, ...message.buttons).then((choice) => {
            switch (choice) {
                case 'Review Diff':
                    void this.openDiff();
                    break;
                case 'Accept':
                    void this.accept();
                    break;
                case 'Reject':
                    void this.reject();
                    break;
                case 'Retry':
                    void this.retry();
                    break;
            }
        });
    }

    /** Tells the server to forget a proposal the user neither accepted nor rejected (no reason). */
    private async forgetProposal(client: LanguageClient): Promise<void> {
        const old = this.run;
        if (old?.state === 'proposed' && old.result) {
            old.state = 'discarded';
            await this.execute(client, CMD_AGENT_DISCARD, discardArgs(old.result.id)).catch((e) => this.output.warn(`sift.agent.discard: ${String(e)}`));
        }
    }

    private execute<R>(client: LanguageClient, command: string, arg: { id: string } | AgentDiscardArgs): Promise<R> {
        return client.sendRequest(ExecuteCommandRequest.type, { command, arguments: [arg] }) as Promise<R>;
    }

    private async accept(): Promise<void> {
        const run = this.run;
        if (run?.state !== 'proposed' || run.result === undefined) {
            void vscode.window.showInformationMessage('sift agent: no proposed change to accept.');
            return;
        }
        const client = await this.client();
        if (client === undefined) {
            return;
        }
        let answer: AgentApplyResult | undefined;
        // The server's edit needs confirmation: VS Code opens Refactor Preview with the changes
        // unticked, and the request waits for the user there.
        this.view.message = CONFIRM_HINT;
        const hint = vscode.window.setStatusBarMessage(`$(info) ${CONFIRM_HINT}`);
        try {
            answer = await this.execute<AgentApplyResult>(client, CMD_AGENT_APPLY, { id: run.result.id });
        } catch (error) {
            answer = { applied: false, failureReason: error instanceof Error ? error.message : String(error) };
        } finally {
            hint.dispose();
            this.view.message = undefined;
        }
        const message = appliedMessage(answer);
        if (message.ok) {
            run.state = 'applied';
            run.error = undefined;
            this.refresh();
            // The diff showed a proposal; now the buffers hold it: show those, to review and save.
            await this.closeDiffs();
            const first = run.result.files.find((f) => f.kind !== 'delete');
            if (first) {
                await vscode.window.showTextDocument(vscode.Uri.parse(first.uri), { preview: false }).then(undefined, () => undefined);
            }
            void vscode.window.showInformationMessage(message.text);
        } else {
            run.error = message.text;
            this.refresh();
            void vscode.window.showWarningMessage(message.text, 'Retry').then((choice) => {
                if (choice === 'Retry') {
                    void this.retry();
                }
            });
        }
    }

    /**
     * Reject: the run is discarded and its diffs closed at once; then an input box asks why
     * (optional: Escape, an empty answer or focus elsewhere is no reason), and
     * `sift.agent.discard` is sent with the reason. When its answer carries a lesson (a reason,
     * and a change to an existing file), the user is offered to keep it as a memory note.
     */
    private async reject(): Promise<void> {
        const run = this.run;
        if (run?.state !== 'proposed' || run.result === undefined) {
            return;
        }
        const id = run.result.id;
        const client = await this.client();
        run.state = 'discarded';
        this.refresh();
        // Close the diff editors of this run: they show a change that no longer exists.
        await this.closeDiffs();
        if (client === undefined) {
            return;
        }
        // No ignoreFocusOut: looking elsewhere means no reason, and the discard goes out then.
        const reason = await vscode.window.showInputBox({ ...REJECT_REASON_INPUT });
        const args = discardArgs(id, reason);
        let answer: AgentDiscardResult | null | undefined;
        try {
            answer = await this.execute<AgentDiscardResult | null>(client, CMD_AGENT_DISCARD, args);
        } catch (e) {
            this.output.warn(`sift.agent.discard: ${String(e)}`);
            return;
        }
        this.output.info(`sift.agent.discard: run ${id} rejected${args.reason === undefined ? ' without a reason' : ' with a reason'}${answer?.lesson ? '; a lesson is proposed' : ''}`);
        if (answer?.lesson) {
            void this.memory.offerLesson(answer.lesson);
        }
    }

    /** Remember on a proposed note: written (sift.memory.add) only once the user confirms. */
    private async remember(row?: Row): Promise<void> {
        const run = this.run;
        const index = row?.note;
        const note = index === undefined ? undefined : run?.result?.notes?.[index];
        if (run === undefined || index === undefined || note === undefined || run.remembered.has(index)) {
            return;
        }
        const root = run.root ?? vscode.workspace.workspaceFolders?.[0]?.uri.toString();
        if (root === undefined) {
            return;
        }
        if (await this.memory.rememberProposed(note, root)) {
            run.remembered.add(index);
            this.refresh();
        }
    }

    private async closeDiffs(): Promise<void> {
        for (const group of vscode.window.tabGroups.all) {
            for (const tab of group.tabs) {
                const input = tab.input;
                if (input instanceof vscode.TabInputTextDiff && input.modified.scheme === DOC_SCHEME) {
                    await vscode.window.tabGroups.close(tab);
                }
            }
        }
    }

    dispose(): void {
        this.cancel?.cancel();
        for (const d of this.disposables) {
            d.dispose();
        }
    }
}

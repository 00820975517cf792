// Memory notes in VS Code: the Sift Memory view lists the notes that `sift.memory.list` answers
// (fresh first, stale ones flagged with the reason), a note opens its .sift/memory/<slug>.md,
// and Remember Selection / Verify / Delete run `sift.memory.add`, `sift.memory.verify` and
// `sift.memory.delete`; Keep on the lesson of an agent run rejected with a reason runs
// `sift.memory.add` too. The code lens's `sift.memory.show` opens the notes it names. The view is
// read again after each of these, when indexing ends, when a note file changes on disk, and when
// the server rewrites .sift/memory-state.json (a note's state changed after an index update). What is shown comes from src/memory.ts.

import * as vscode from 'vscode';
import { ExecuteCommandRequest, type LanguageClient } from 'vscode-languageclient/node';

import { COMMANDS, MEMORY_VIEW } from './commands';
import {
    addedMessage,
    deleteQuestion,
    lessonAddArgs,
    lessonQuestion,
    memoryError,
    noteFile,
    noteRows,
    proposedAddArgs,
    rememberQuestion,
    selectionAddArgs,
    viewMessage,
    type MemoryRow,
} from './memory';
import {
    CMD_MEMORY_ADD,
    CMD_MEMORY_DELETE,
    CMD_MEMORY_LIST,
    CMD_MEMORY_VERIFY,
    type MemoryAddArgs,
    type MemoryAddResult,
    type MemoryListResponse,
    type MemoryNote,
    type ProposedNote,
} from './protocol';

const REFRESH_DEBOUNCE_MS = 300;

export class MemoryController implements vscode.TreeDataProvider<MemoryRow>, vscode.Disposable {
    private notes: MemoryNote[] = [];
    private rows: MemoryRow[] = [];
    private timer: NodeJS.Timeout | undefined;
    private readonly changed = new vscode.EventEmitter<MemoryRow | undefined>();
    readonly onDidChangeTreeData = this.changed.event;
    private readonly view: vscode.TreeView<MemoryRow>;
    private readonly disposables: vscode.Disposable[] = [];

    constructor(
        /** The client, started when needed (user actions). */
        private readonly ready: () => Promise<LanguageClient | undefined>,
        /** The client only when it is running (automatic refreshes never start or report anything). */
        private readonly running: () => LanguageClient | undefined,
        private readonly output: vscode.LogOutputChannel,
    ) {
        this.view = vscode.window.createTreeView(MEMORY_VIEW, { treeDataProvider: this });
        // The notes, and the server's cache of their states: sift rewrites
        // .sift/memory-state.json when a note's state changes (after an index update), which is
        // how the view learns that cited code changed.
        const watcher = vscode.workspace.createFileSystemWatcher('**/.sift/{memory/*.md,memory-state.json}');
        this.disposables.push(
            this.view,
            this.changed,
            watcher,
            watcher.onDidCreate(() => this.scheduleRefresh()),
            watcher.onDidChange(() => this.scheduleRefresh()),
            watcher.onDidDelete(() => this.scheduleRefresh()),
            this.view.onDidChangeVisibility((e) => {
                if (e.visible) {
                    this.scheduleRefresh();
                }
            }),
            vscode.commands.registerCommand(COMMANDS.refreshMemory, () => this.refresh(true)),
            vscode.commands.registerCommand(COMMANDS.openMemoryNote, (row?: MemoryRow | string) => this.open(row)),
            vscode.commands.registerCommand(COMMANDS.verifyMemoryNote, (row?: MemoryRow) => this.verify(row)),
            vscode.commands.registerCommand(COMMANDS.deleteMemoryNote, (row?: MemoryRow) => this.delete(row)),
            vscode.commands.registerCommand(COMMANDS.rememberSelection, () => this.rememberSelection()),
        );
    }

    // ---- the view ----------------------------------------------------------------------------

    getChildren(row?: MemoryRow): MemoryRow[] {
        return row ? (row.children ?? []) : this.rows;
    }

    getTreeItem(row: MemoryRow): vscode.TreeItem {
        const item = new vscode.TreeItem(
            row.label,
            row.children && row.children.length > 0 ? vscode.TreeItemCollapsibleState.Collapsed : vscode.TreeItemCollapsibleState.None,
        );
        item.id = row.id;
        item.description = row.description;
        item.tooltip = row.tooltip;
        item.iconPath = new vscode.ThemeIcon(row.icon, row.color ? new vscode.ThemeColor(row.color) : undefined);
        item.contextValue = row.contextValue;
        if (row.contextValue === 'citation' && row.target) {
            const uri = vscode.Uri.joinPath(vscode.Uri.file(row.target.root), row.target.path);
            const line = Math.max(0, row.target.line - 1);
            item.command = { command: 'vscode.open', title: 'Open Cited Code', arguments: [uri, { selection: new vscode.Range(line, 0, line, 0) }] };
        } else if (row.file) {
            item.command = { command: COMMANDS.openMemoryNote, title: 'Open Memory Note', arguments: [row] };
        }
        return item;
    }

    /** Refreshes soon (several file events in a row make one request). */
    scheduleRefresh(): void {
        if (this.timer !== undefined) {
            clearTimeout(this.timer);
        }
        this.timer = setTimeout(() => {
            this.timer = undefined;
            void this.refresh(false);
        }, REFRESH_DEBOUNCE_MS);
    }

    /** Asks the server for the notes; `user`: the user asked (start the server, say what failed). */
    async refresh(user: boolean): Promise<void> {
        const client = user ? await this.ready() : this.running();
        if (client === undefined) {
            return;
        }
        try {
            const answer = (await this.execute<MemoryListResponse>(client, CMD_MEMORY_LIST, [{}])) ?? { notes: [] };
            this.notes = answer.notes ?? [];
            this.rows = noteRows(this.notes);
            this.view.message = viewMessage(this.notes);
            this.view.badge =
                this.notes.some((n) => n.state === 'stale')
                    ? { value: this.notes.filter((n) => n.state === 'stale').length, tooltip: 'stale sift notes' }
                    : undefined;
            this.changed.fire(undefined);
        } catch (error) {
            const message = memoryError(CMD_MEMORY_LIST, error);
            this.output.warn(`sift.memory.list: ${message}`);
            if (user) {
                void vscode.window.showErrorMessage(`sift memory: ${message}`);
            }
        }
    }

    private note(slug: string): MemoryNote | undefined {
        return this.notes.find((n) => n.slug === slug);
    }

    private execute<R>(client: LanguageClient, command: string, args: unknown[]): Promise<R> {
        return client.sendRequest(ExecuteCommandRequest.type, { command, arguments: args }) as Promise<R>;
    }

    // ---- actions ---------------------------------------------------------------------------

    private async open(row?: MemoryRow | string): Promise<void> {
        const file = typeof row === 'string' ? row : row?.file;
        if (file === undefined) {
            return;
        }
        await vscode.window.showTextDocument(vscode.Uri.file(file), { preview: true });
    }

    /** Opens the notes a code lens names (the answer of `sift.memory.show`): one at once, several through a pick. */
    async showNotes(answer: MemoryListResponse | null | undefined): Promise<void> {
        const notes = answer?.notes ?? [];
        if (notes.length === 0) {
            return;
        }
        let chosen: MemoryNote | undefined = notes[0];
        if (notes.length > 1) {
            const rows = noteRows(notes);
            const pick = await vscode.window.showQuickPick(
                rows.map((r) => ({ label: r.label, description: r.description, detail: notes.find((n) => n.slug === r.slug)?.text.split('\n')[0], row: r })),
                { title: 'sift notes about this code', matchOnDescription: true },
            );
            chosen = pick ? notes.find((n) => n.slug === pick.row.slug) : undefined;
        }
        const file = chosen ? noteFile(chosen) : undefined;
        if (file) {
            await this.open(file);
        }
    }

    private async rememberSelection(): Promise<void> {
        const editor = vscode.window.activeTextEditor;
        if (editor === undefined || editor.document.uri.scheme !== 'file') {
            void vscode.window.showInformationMessage('sift memory: select the code the note is about in a file first.');
            return;
        }
        const text = await vscode.window.showInputBox({
            title: 'Sift: Remember Selection',
            prompt: 'One lasting fact about this code (a convention, an invariant, a pitfall); sift cites the definition the selection is in.',
            placeHolder: 'e.g. totals are rounded once, at the end: rounding line items breaks reconciliation',
            ignoreFocusOut: true,
        });
        if (text === undefined) {
            return;
        }
        const args = selectionAddArgs(editor.document.uri.toString(), editor.selection, text);
        if (args === undefined) {
            void vscode.window.showWarningMessage('sift memory: a note needs some text.');
            return;
        }
        if (editor.document.isDirty) {
            // The server cites the file as last indexed: save first, so the note cites what the user sees.
            await editor.document.save();
        }
        await this.add(args);
    }

    /** Writes a note the agent proposed, once the user confirms it (a modal question). */
    async rememberProposed(note: ProposedNote, rootUri: string): Promise<boolean> {
        const yes = await vscode.window.showInformationMessage(rememberQuestion(note), { modal: true }, 'Remember');
        if (yes !== 'Remember') {
            return false;
        }
        return this.add(proposedAddArgs(note, rootUri));
    }

    /**
     * Offers to keep the lesson of a run rejected with a reason (the `lesson` of
     * `sift.agent.discard`'s answer): a notification with Keep; on Keep, `sift.memory.add` with
     * the lesson as its one argument, and the view is read again. Nothing is written otherwise.
     * False when there was no lesson or it was not kept.
     */
    async offerLesson(lesson: unknown): Promise<boolean> {
        const args = lessonAddArgs(lesson);
        if (args === undefined) {
            return false;
        }
        const choice = await vscode.window.showInformationMessage(lessonQuestion(args), 'Keep');
        if (choice !== 'Keep') {
            return false;
        }
        return this.add(args);
    }

    private async add(args: MemoryAddArgs): Promise<boolean> {
        const client = await this.ready();
        if (client === undefined) {
            return false;
        }
        try {
            const result = await this.execute<MemoryAddResult>(client, CMD_MEMORY_ADD, [args]);
            await this.refresh(false);
            void vscode.window.showInformationMessage(addedMessage(result), 'Open').then((choice) => {
                if (choice === 'Open') {
                    void this.open(result.path);
                }
            });
            return true;
        } catch (error) {
            void vscode.window.showErrorMessage(`sift memory: ${memoryError(CMD_MEMORY_ADD, error)}`);
            return false;
        }
    }

    private async verify(row?: MemoryRow): Promise<void> {
        const note = row ? this.note(row.slug) : undefined;
        if (note === undefined) {
            return;
        }
        const client = await this.ready();
        if (client === undefined) {
            return;
        }
        try {
            await this.execute(client, CMD_MEMORY_VERIFY, [{ slug: note.slug }]);
            await this.refresh(false);
            void vscode.window.showInformationMessage(`sift memory: ${note.slug} confirmed; its citations now point at the code as it is.`);
        } catch (error) {
            void vscode.window.showErrorMessage(`sift memory: cannot verify ${note.slug}: ${memoryError(CMD_MEMORY_VERIFY, error)}`);
        }
    }

    private async delete(row?: MemoryRow): Promise<void> {
        const note = row ? this.note(row.slug) : undefined;
        if (note === undefined) {
            return;
        }
        const yes = await vscode.window.showWarningMessage(deleteQuestion(note), { modal: true }, 'Delete');
        if (yes !== 'Delete') {
            return;
        }
        const client = await this.ready();
        if (client === undefined) {
            return;
        }
        try {
            await this.execute(client, CMD_MEMORY_DELETE, [{ slug: note.slug }]);
        } catch (error) {
            void vscode.window.showErrorMessage(`sift memory: cannot delete ${note.slug}: ${memoryError(CMD_MEMORY_DELETE, error)}`);
        }
        await this.refresh(false);
    }

    dispose(): void {
        if (this.timer !== undefined) {
            clearTimeout(this.timer);
        }
        for (const d of this.disposables) {
            d.dispose();
        }
    }
}


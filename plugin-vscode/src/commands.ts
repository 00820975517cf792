// The extension's own commands (package.json `contributes.commands` must list exactly these and
// the features' commands; a unit test checks). None may share an id with a server command:
// vscode-languageclient registers every command the server advertises (sift.search,
// sift.reindex, sift.status, sift.dismiss, …) under its own name.

export const COMMANDS = {
    search: 'sift.searchCodebase',
    reindex: 'sift.reindexWorkspace',
    status: 'sift.showStatus',
    restart: 'sift.restartServer',
    showLog: 'sift.showLog',
} as const;

export const COMMAND_TITLES: Record<string, string> = {
    [COMMANDS.search]: 'Search Codebase',
    [COMMANDS.reindex]: 'Reindex',
    [COMMANDS.status]: 'Show Status',
    [COMMANDS.restart]: 'Restart Server',
    [COMMANDS.showLog]: 'Show Log',
};

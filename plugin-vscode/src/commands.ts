// The extension's own commands (package.json `contributes.commands` must list exactly these and
// the features' commands; a unit test checks). None may share an id with a server command:
// vscode-languageclient registers every command the server advertises (sift.search,
// sift.reindex, sift.status, sift.dismiss, …) under its own name.

export const COMMANDS = {
    search: 'sift.searchCodebase',
    reindex: 'sift.reindexWorkspace',
    status: 'sift.showStatus',
    stats: 'sift.showStats',
    restart: 'sift.restartServer',
    showLog: 'sift.showLog',
    askAgent: 'sift.askAgent',
    askAgentBestOf: 'sift.askAgentBestOf',
    acceptAgent: 'sift.acceptAgentChange',
    rejectAgent: 'sift.rejectAgentChange',
    retryAgent: 'sift.retryAgent',
    cancelAgent: 'sift.cancelAgent',
    openAgentDiff: 'sift.openAgentDiff',
    showAgentDiff: 'sift.showAgentDiff',
    rememberAgentNote: 'sift.rememberAgentNote',
    rememberSelection: 'sift.rememberSelection',
    refreshMemory: 'sift.refreshMemory',
    openMemoryNote: 'sift.openMemoryNote',
    verifyMemoryNote: 'sift.verifyMemoryNote',
    deleteMemoryNote: 'sift.deleteMemoryNote',
} as const;

export const COMMAND_TITLES: Record<string, string> = {
    [COMMANDS.search]: 'Search Codebase',
    [COMMANDS.reindex]: 'Reindex',
    [COMMANDS.status]: 'Show Status',
    [COMMANDS.stats]: 'Show Stats',
    [COMMANDS.restart]: 'Restart Server',
    [COMMANDS.showLog]: 'Show Log',
    [COMMANDS.askAgent]: 'Ask Agent',
    [COMMANDS.askAgentBestOf]: 'Ask Agent (Best of N)',
    [COMMANDS.acceptAgent]: 'Accept Agent Change',
    [COMMANDS.rejectAgent]: 'Reject Agent Change',
    [COMMANDS.retryAgent]: 'Retry Agent Task',
    [COMMANDS.cancelAgent]: 'Cancel Agent',
    [COMMANDS.openAgentDiff]: 'Open Agent Diff',
    [COMMANDS.showAgentDiff]: 'Show Agent Change as a Diff',
    [COMMANDS.rememberAgentNote]: 'Remember Proposed Note',
    [COMMANDS.rememberSelection]: 'Remember Selection (Memory Note)',
    [COMMANDS.refreshMemory]: 'Refresh Memory Notes',
    [COMMANDS.openMemoryNote]: 'Open Memory Note',
    [COMMANDS.verifyMemoryNote]: 'Verify Memory Note',
    [COMMANDS.deleteMemoryNote]: 'Delete Memory Note',
};

/** The Sift Agent view (in the Sift view container) and the context key its menus read. */
export const AGENT_VIEW = 'siftAgent';
export const AGENT_STATE_KEY = 'sift.agentState';

/** The Sift Memory view (the same container, below the Agent view). */
export const MEMORY_VIEW = 'siftMemory';

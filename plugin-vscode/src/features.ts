// Server-side features that the user starts from the command palette and that the server may or
// may not implement yet (review today; agent and memory later). Each one mirrors a command the
// server documents in docs/lsp.md. Pure (no `vscode`).
//
// Extension point: to add a feature (for example an agent or memory command once docs/lsp.md
// documents it), add a ServerFeature here, a matching entry in package.json
// `contributes.commands` (the unit tests check both ways), and, if its result needs more than a
// message, a handler in extension.ts's `runFeature`.

export interface ServerFeature {
    /** The VS Code command (must differ from every server command: vscode-languageclient registers those). */
    command: string;
    /** The palette title (after the "Sift" category). */
    title: string;
    /** The `workspace/executeCommand` command sent to the server. */
    serverCommand: string;
    /** What the user would call it in "your sift server does not support … yet". */
    noun: string;
    /** Whether the Problems panel is shown afterwards (the server publishes findings as diagnostics). */
    showProblems: boolean;
}

export const FEATURES: ServerFeature[] = [
    {
        command: 'sift.reviewChanges',
        title: 'Review Changes',
        serverCommand: 'sift.review',
        noun: 'review',
        showProblems: true,
    },
    {
        command: 'sift.pauseEmbedding',
        title: 'Pause Embedding',
        serverCommand: 'sift.embeddings.pause',
        noun: 'pausing embeddings',
        showProblems: false,
    },
    {
        command: 'sift.resumeEmbedding',
        title: 'Resume Embedding',
        serverCommand: 'sift.embeddings.resume',
        noun: 'resuming embeddings',
        showProblems: false,
    },
];

/** The JSON-RPC error code that means "the server does not know this method". */
const METHOD_NOT_FOUND = -32601;

/**
 * Whether an error answered to `workspace/executeCommand` says that the server does not know the
 * command. sift answers InvalidParams with "unknown command …"; other servers answer
 * MethodNotFound.
 */
export function isUnknownCommand(error: unknown): boolean {
    if (typeof error !== 'object' || error === null) {
        return false;
    }
    const e = error as { code?: unknown; message?: unknown };
    const message = typeof e.message === 'string' ? e.message : '';
    if (e.code === METHOD_NOT_FOUND) {
        return true;
    }
    // sift: InvalidParams, "unknown command \"sift.review\"; sift knows …".
    return /unknown command|command .*not (found|supported)|no such command/i.test(message);
}

/** Whether the server says (in `executeCommandProvider.commands`) that it runs `command`. */
export function advertises(capabilities: unknown, command: string): boolean | undefined {
    const commands = (capabilities as { executeCommandProvider?: { commands?: unknown } } | undefined)
        ?.executeCommandProvider?.commands;
    if (!Array.isArray(commands)) {
        return undefined;
    }
    return commands.includes(command);
}

/**
 * The message shown when the server lacks a feature. What matters comes first: a notification
 * toast shows about 55 characters before it cuts the line.
 */
export function unsupportedMessage(feature: ServerFeature, version: string | undefined): string {
    return `Your sift server does not support ${feature.noun} yet; update sift${version ? ` (this one is ${version})` : ''}.`;
}

/** The message after a feature ran, from whatever the server answered. */
export function resultMessage(feature: ServerFeature, result: unknown): string {
    if (typeof result === 'object' && result !== null) {
        const r = result as Record<string, unknown>;
        if (typeof r.message === 'string') {
            return `sift ${feature.noun}: ${r.message}`;
        }
        const findings = Array.isArray(r.findings) ? r.findings.length : r.findings;
        if (typeof findings === 'number') {
            return `sift ${feature.noun}: ${findings} finding${findings === 1 ? '' : 's'} (in the Problems panel)`;
        }
    }
    return `sift ${feature.noun}: done`;
}

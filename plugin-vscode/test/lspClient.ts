// A minimal LSP client over stdio for the tests that drive the real `sift lsp`: enough to check
// that the shapes this extension reads are the ones the server sends.

import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';

export interface RpcError extends Error {
    code: number;
    data?: unknown;
}

type Pending = { resolve(value: unknown): void; reject(error: RpcError): void };

export class LspClient {
    private readonly proc: ChildProcessWithoutNullStreams;
    private buffer = Buffer.alloc(0);
    private nextId = 1;
    private readonly pending = new Map<number, Pending>();
    readonly notifications: { method: string; params: unknown }[] = [];
    readonly serverRequests: { method: string; params: unknown }[] = [];
    private waiters: { test(): boolean; resolve(): void }[] = [];
    stderr = '';
    /** How to answer a request from the server (undefined: `null`). */
    answer: ((method: string, params: unknown) => unknown) | undefined;
    exited: Promise<number | null>;

    constructor(binary: string, args: string[], cwd: string, env?: NodeJS.ProcessEnv) {
        this.proc = spawn(binary, args, { cwd, stdio: ['pipe', 'pipe', 'pipe'], ...(env ? { env } : {}) });
        this.proc.stdout.on('data', (chunk: Buffer) => this.onData(chunk));
        this.proc.stderr.on('data', (chunk: Buffer) => {
            this.stderr += chunk.toString();
        });
        this.exited = new Promise((resolve) => this.proc.on('exit', (code) => resolve(code)));
    }

    private onData(chunk: Buffer): void {
        this.buffer = Buffer.concat([this.buffer, chunk]);
        for (;;) {
            const headerEnd = this.buffer.indexOf('\r\n\r\n');
            if (headerEnd < 0) {
                return;
            }
            const header = this.buffer.subarray(0, headerEnd).toString('ascii');
            const m = header.match(/Content-Length: *(\d+)/i);
            if (!m) {
                throw new Error(`bad header from the server: ${header}`);
            }
            const length = Number(m[1]);
            if (this.buffer.length < headerEnd + 4 + length) {
                return;
            }
            const body = this.buffer.subarray(headerEnd + 4, headerEnd + 4 + length).toString('utf8');
            this.buffer = this.buffer.subarray(headerEnd + 4 + length);
            this.onMessage(JSON.parse(body) as Record<string, unknown>);
        }
    }

    private onMessage(msg: Record<string, unknown>): void {
        if ('id' in msg && ('result' in msg || 'error' in msg) && !('method' in msg)) {
            const p = this.pending.get(msg.id as number);
            this.pending.delete(msg.id as number);
            if (p) {
                if (msg.error) {
                    const e = msg.error as { code: number; message: string; data?: unknown };
                    p.reject(Object.assign(new Error(e.message), { code: e.code, data: e.data }));
                } else {
                    p.resolve(msg.result);
                }
            }
        } else if ('id' in msg && 'method' in msg) {
            // A request from the server (progress token creation, registrations, applyEdit):
            // `answer` decides (default: accept it with a null result).
            this.serverRequests.push({ method: msg.method as string, params: msg.params });
            const result = this.answer?.(msg.method as string, msg.params) ?? null;
            this.send({ jsonrpc: '2.0', id: msg.id, result });
        } else if ('method' in msg) {
            this.notifications.push({ method: msg.method as string, params: msg.params });
        }
        this.waiters = this.waiters.filter((w) => {
            if (w.test()) {
                w.resolve();
                return false;
            }
            return true;
        });
    }

    private send(msg: unknown): void {
        const body = Buffer.from(JSON.stringify(msg), 'utf8');
        this.proc.stdin.write(`Content-Length: ${body.length}\r\n\r\n`);
        this.proc.stdin.write(body);
    }

    /** The id the next request gets (to cancel it with `$/cancelRequest`). */
    get peekId(): number {
        return this.nextId;
    }

    request<R>(method: string, params: unknown, timeoutMs = 20000): Promise<R> {
        const id = this.nextId++;
        return new Promise<R>((resolve, reject) => {
            const timer = setTimeout(() => {
                this.pending.delete(id);
                reject(Object.assign(new Error(`${method}: no answer in ${timeoutMs} ms; stderr: ${this.stderr}`), { code: 0 }));
            }, timeoutMs);
            this.pending.set(id, {
                resolve: (v) => {
                    clearTimeout(timer);
                    resolve(v as R);
                },
                reject: (e) => {
                    clearTimeout(timer);
                    reject(e);
                },
            });
            this.send({ jsonrpc: '2.0', id, method, params });
        });
    }

    notify(method: string, params: unknown): void {
        this.send({ jsonrpc: '2.0', method, params });
    }

    /** Resolves when `test` holds (checked after every message), or rejects after `timeoutMs`. */
    until(test: () => boolean, timeoutMs = 20000): Promise<void> {
        if (test()) {
            return Promise.resolve();
        }
        return new Promise((resolve, reject) => {
            const timer = setTimeout(() => reject(new Error(`timed out; stderr: ${this.stderr}`)), timeoutMs);
            this.waiters.push({
                test,
                resolve: () => {
                    clearTimeout(timer);
                    resolve();
                },
            });
        });
    }

    async close(): Promise<number | null> {
        try {
            await this.request('shutdown', null, 5000);
            this.notify('exit', null);
        } catch {
            this.proc.kill();
        }
        const timer = setTimeout(() => this.proc.kill('SIGKILL'), 5000);
        const code = await this.exited;
        clearTimeout(timer);
        return code;
    }
}

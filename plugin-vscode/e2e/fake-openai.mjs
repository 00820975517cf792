// A scripted OpenAI-compatible endpoint on 127.0.0.1 for the agent tests (the e2e test and
// test/agentServer.test.ts): POST /v1/chat/completions answers with a streamed (SSE) tool call
// while the conversation has no tool result yet, and with a final text once it has one. So one
// agent run is: the task -> `edit` -> the edit's result -> "done" text. Stateless: a retry of
// the same task gets the same answers. Nothing here reaches beyond this machine.
//
//   node e2e/fake-openai.mjs '<script JSON>'
// prints `listening PORT` on stdout, then one line `request N tools=… last=ROLE` per request.
// Script: { "tool": { "name": "edit", "arguments": { … } }, "final": "text", "delayMs": 0,
// "delayWhen": "word" } (`delayMs`: a pause before each answer, to give a test time to cancel;
// with `delayWhen`, only in conversations whose user messages contain that word). Optional
// `"also": [{ "when": "word", "tool": { … }, "final": "text" }]`: conversations whose user
// messages contain that word get that tool call and final text instead (the first that matches).

import * as http from 'node:http';

const script = JSON.parse(process.argv[2] ?? '{}');
const defaultTool = script.tool ?? { name: 'edit', arguments: {} };
const defaultFinal = script.final ?? 'Done.';
const delayMs = script.delayMs ?? 0;
let count = 0;

function chunk(delta, finish = null) {
    return { id: 'chatcmpl-fake', object: 'chat.completion.chunk', model: 'fake', choices: [{ index: 0, delta, finish_reason: finish }] };
}

function events(messages, userText) {
    const alt = (script.also ?? []).find((a) => userText.includes(a.when));
    const tool = alt?.tool ?? defaultTool;
    const finalText = alt?.final ?? defaultFinal;
    const hasToolResult = messages.some((m) => m.role === 'tool');
    if (!hasToolResult) {
        return [
            chunk({ role: 'assistant', content: null }),
            chunk({ tool_calls: [{ index: 0, id: `call_${count}`, type: 'function', function: { name: tool.name, arguments: '' } }] }),
            // The arguments arrive in two pieces, as real endpoints stream them.
            ...splitInTwo(JSON.stringify(tool.arguments)).map((piece) => chunk({ tool_calls: [{ index: 0, function: { arguments: piece } }] })),
            chunk({}, 'tool_calls'),
            { id: 'chatcmpl-fake', object: 'chat.completion.chunk', choices: [], usage: { prompt_tokens: 100, completion_tokens: 20, total_tokens: 120 } },
        ];
    }
    return [
        chunk({ role: 'assistant', content: '' }),
        ...splitInTwo(finalText).map((piece) => chunk({ content: piece })),
        chunk({}, 'stop'),
        { id: 'chatcmpl-fake', object: 'chat.completion.chunk', choices: [], usage: { prompt_tokens: 150, completion_tokens: 10, total_tokens: 160 } },
    ];
}

function splitInTwo(s) {
    const half = Math.floor(s.length / 2);
    return [s.slice(0, half), s.slice(half)];
}

const server = http.createServer((req, res) => {
    let body = '';
    req.on('data', (d) => (body += d));
    req.on('end', async () => {
        if (req.method !== 'POST' || !req.url.endsWith('/chat/completions')) {
            res.writeHead(404, { 'content-type': 'application/json' });
            res.end(JSON.stringify({ error: { message: `no ${req.method} ${req.url} here` } }));
            return;
        }
        count++;
        let request;
        try {
            request = JSON.parse(body);
        } catch {
            res.writeHead(400, { 'content-type': 'application/json' });
            res.end(JSON.stringify({ error: { message: 'bad JSON' } }));
            return;
        }
        const messages = request.messages ?? [];
        const tools = (request.tools ?? []).map((t) => t.function?.name).join(',');
        process.stdout.write(`request ${count} tools=${tools} last=${messages.at(-1)?.role}\n`);
        const userText = messages.filter((m) => m.role === 'user').map((m) => (typeof m.content === 'string' ? m.content : JSON.stringify(m.content))).join('\n');
        if (delayMs > 0 && (script.delayWhen === undefined || userText.includes(script.delayWhen))) {
            await new Promise((r) => setTimeout(r, delayMs));
        }
        res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
        for (const e of events(messages, userText)) {
            res.write(`data: ${JSON.stringify(e)}\n\n`);
        }
        res.end('data: [DONE]\n\n');
    });
});

server.listen(0, '127.0.0.1', () => {
    process.stdout.write(`listening ${server.address().port}\n`);
});

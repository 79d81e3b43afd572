// A small 2026-07-28 Tasks server on the TypeScript SDK v2.
//
//   node server.mjs                 serve on stdin/stdout
//   node server.mjs --http ADDR     serve Streamable HTTP at http://ADDR/mcp (port 0: any free
//                                   port); prints the endpoint URL as the first line of stdout
//
// The SDK has no Tasks server of its own, so the extension is built here on
// its low-level Server: tools/call returns a CreateTaskResult, and tasks/get,
// tasks/update and tasks/cancel are custom request handlers over a Map.
//
// Tools (each a task for a client that declares the extension, else -32021):
//   progress    steps × step_ms, a status message per step
//   fail        ends `failed` with JSON-RPC error -32001
//   tool_error  completes with isError: true (the stored result carries resultType)
//   confirm     asks an elicitation form (key "confirm"; with rounds: 2 also "note")
//   forever     runs until tasks/cancel

import { randomUUID } from 'node:crypto';
import { createServer } from 'node:http';
import { Readable } from 'node:stream';

import {
    CLIENT_CAPABILITIES_META_KEY,
    ProtocolError,
    Server,
    createMcpHandler,
} from '@modelcontextprotocol/server';
import { serveStdio } from '@modelcontextprotocol/server/stdio';
import * as z from 'zod';

const TASKS = 'io.modelcontextprotocol/tasks';
const POLL_MS = 50;
const TTL_MS = 60_000;

/** Every task, by id: the DetailedTask fields plus what drives it. */
const tasks = new Map();

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

function declaresTasks(ctx) {
    const caps = ctx?.mcpReq?.envelope?.[CLIENT_CAPABILITIES_META_KEY];
    return Boolean(caps?.extensions?.[TASKS]);
}

function needsTasks() {
    return new ProtocolError(-32021, 'Missing required client capability', {
        requiredCapabilities: { extensions: { [TASKS]: {} } },
    });
}

function touch(task, fields) {
    Object.assign(task, fields, { lastUpdatedAt: new Date().toISOString() });
}

function lookup(taskId) {
    const task = tasks.get(taskId);
    if (!task) throw new ProtocolError(-32602, 'Task not found');
    return task;
}

/** The wire view of a task: a DetailedTask for its status. */
function detailed(task) {
    const view = {
        taskId: task.taskId,
        status: task.status,
        createdAt: task.createdAt,
        lastUpdatedAt: task.lastUpdatedAt,
        ttlMs: task.ttlMs,
        pollIntervalMs: task.pollIntervalMs,
    };
    if (task.statusMessage !== undefined) view.statusMessage = task.statusMessage;
    if (task.status === 'input_required') view.inputRequests = task.inputRequests;
    if (task.status === 'completed') view.result = task.result;
    if (task.status === 'failed') view.error = task.error;
    return view;
}

/** Starts `run(task)` in the background; its return value completes the task. */
function start(run) {
    const now = new Date().toISOString();
    const task = {
        taskId: randomUUID(),
        status: 'working',
        createdAt: now,
        lastUpdatedAt: now,
        ttlMs: TTL_MS,
        pollIntervalMs: POLL_MS,
        cancelRequested: false,
        waiting: new Map(),
    };
    tasks.set(task.taskId, task);
    // The creation result is the task as created: no input requests yet.
    const seed = { resultType: 'task', ...detailed(task) };
    run(task).then(
        (result) => {
            if (task.status === 'cancelled') return;
            touch(task, { status: 'completed', result });
        },
        (error) => {
            if (task.status === 'cancelled') return;
            if (error === CANCELLED) touch(task, { status: 'cancelled', statusMessage: 'cancelled' });
            else touch(task, { status: 'failed', error: { code: error.code ?? -32603, message: error.message, data: error.data } });
        },
    );
    return seed;
}

const CANCELLED = Symbol('cancelled');

/** Sleeps, unless the task is cancelled first. */
async function work(task, ms) {
    const until = Date.now() + ms;
    while (Date.now() < until) {
        if (task.cancelRequested) throw CANCELLED;
        await sleep(Math.min(20, until - Date.now()));
    }
    if (task.cancelRequested) throw CANCELLED;
}

/** Asks the client for input and waits for tasks/update to answer it. */
function ask(task, key, request) {
    return new Promise((resolve, reject) => {
        task.waiting.set(key, { resolve, reject });
        task.inputRequests = { ...(task.inputRequests ?? {}), [key]: request };
        touch(task, { status: 'input_required' });
    });
}

const text = (t) => ({ content: [{ type: 'text', text: t }] });

/** An elicitation form asking for one required field. */
const form = (message, field, type) => ({
    method: 'elicitation/create',
    params: {
        mode: 'form',
        message,
        requestedSchema: { type: 'object', properties: { [field]: { type } }, required: [field] },
    },
});

const TOOLS = {
    async progress(task, args) {
        const steps = args.steps ?? 3;
        const stepMs = args.step_ms ?? 100;
        touch(task, { statusMessage: 'starting' });
        for (let i = 1; i <= steps; i++) {
            await work(task, stepMs);
            touch(task, { statusMessage: `step ${i}/${steps}` });
        }
        return { ...text(`done after ${steps} steps`), structuredContent: { steps } };
    },
    async fail(task) {
        await work(task, 100);
        throw new ProtocolError(-32001, 'the export backend is unavailable', { retryAfterMs: 1000 });
    },
    async tool_error(task) {
        await work(task, 100);
        // Some servers store the result with its resultType; clients must accept it.
        return { resultType: 'complete', content: [{ type: 'text', text: 'the table "orders" does not exist' }], isError: true };
    },
    async confirm(task, args) {
        touch(task, { statusMessage: 'waiting for confirmation' });
        const answer = await ask(task, 'confirm', form('Export 42 rows?', 'approved', 'boolean'));
        const approved = answer?.action === 'accept' && answer?.content?.approved === true;
        if (!approved) return text(`not exported ("${answer?.action}")`);
        let summary = 'exported 42 rows';
        if ((args.rounds ?? 1) > 1) {
            touch(task, { statusMessage: 'waiting for a note' });
            const note = await ask(task, 'note', form('A note for the audit log?', 'note', 'string'));
            if (typeof note?.content?.note === 'string') summary += ` (note: ${note.content.note})`;
        }
        touch(task, { statusMessage: 'done' });
        return text(summary);
    },
    async forever(task) {
        touch(task, { statusMessage: 'running until cancelled' });
        for (;;) await work(task, 1000);
    },
};

const taskParams = z.object({ taskId: z.string() }).passthrough();

function build() {
    const server = new Server(
        { name: 'ts-peer', version: '0.0.0' },
        { capabilities: { tools: {}, extensions: { [TASKS]: {} } } },
    );

    server.setRequestHandler('tools/list', async () => ({
        tools: Object.keys(TOOLS).map((name) => ({ name, inputSchema: { type: 'object' } })),
    }));

    server.setRequestHandler('tools/call', async (request, ctx) => {
        const tool = TOOLS[request.params.name];
        if (!tool) throw new ProtocolError(-32602, `unknown tool ${request.params.name}`);
        if (!declaresTasks(ctx)) throw needsTasks();
        const args = request.params.arguments ?? {};
        return start((task) => tool(task, args));
    });

    server.setRequestHandler('tasks/get', { params: taskParams }, async (params, ctx) => {
        if (!declaresTasks(ctx)) throw needsTasks();
        return detailed(lookup(params.taskId));
    });

    server.setRequestHandler(
        'tasks/update',
        { params: taskParams },
        async (params, ctx) => {
            if (!declaresTasks(ctx)) throw needsTasks();
            const task = lookup(params.taskId);
            // The SDK lifts `inputResponses` off every request (it is an MRTR
            // field too) and hands it over on the context.
            const responses = params.inputResponses ?? ctx.mcpReq.inputResponses ?? {};
            for (const [key, response] of Object.entries(responses)) {
                const waiter = task.waiting.get(key);
                if (!waiter) continue; // not outstanding: ignored, as the extension asks
                task.waiting.delete(key);
                delete task.inputRequests[key];
                if (task.waiting.size === 0) touch(task, { status: 'working' });
                waiter.resolve(response);
            }
            return {};
        },
    );

    server.setRequestHandler('tasks/cancel', { params: taskParams }, async (params, ctx) => {
        if (!declaresTasks(ctx)) throw needsTasks();
        const task = lookup(params.taskId);
        task.cancelRequested = true;
        for (const waiter of task.waiting.values()) waiter.reject(CANCELLED);
        task.waiting.clear();
        return {};
    });

    return server;
}

/** Serves the SDK's web-standard handler from node:http on `addr`. */
function serveHttp(addr) {
    const handler = createMcpHandler(build, { legacy: 'reject' });
    const lastColon = addr.lastIndexOf(':');
    const host = addr.slice(0, lastColon).replace(/^\[|\]$/g, '');
    const port = Number(addr.slice(lastColon + 1));
    const server = createServer(async (req, res) => {
        try {
            const chunks = [];
            for await (const chunk of req) chunks.push(chunk);
            const body = chunks.length ? Buffer.concat(chunks) : undefined;
            const request = new Request(`http://${req.headers.host}${req.url}`, {
                method: req.method,
                headers: Object.entries(req.headers).flatMap(([k, v]) =>
                    Array.isArray(v) ? v.map((x) => [k, x]) : [[k, v]],
                ),
                body: req.method === 'GET' || req.method === 'HEAD' ? undefined : body,
            });
            const response = await handler.fetch(request);
            res.writeHead(response.status, Object.fromEntries(response.headers));
            if (response.body) Readable.fromWeb(response.body).pipe(res);
            else res.end();
        } catch (error) {
            res.writeHead(500).end(String(error));
        }
    });
    server.listen(port, host, () => {
        const { port: bound } = server.address();
        const shown = host.includes(':') ? `[${host}]` : host;
        process.stdout.write(`http://${shown}:${bound}/mcp\n`);
    });
}

const httpAt = process.argv.indexOf('--http');
if (httpAt >= 0) serveHttp(process.argv[httpAt + 1] ?? '127.0.0.1:0');
else serveStdio(build);

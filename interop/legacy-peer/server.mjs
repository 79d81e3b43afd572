// A small 2025-11-25 Tasks server (the experimental tasks of SEP-1686) on the
// TypeScript SDK 1.32 (`@modelcontextprotocol/sdk`), for the interop tests.
//
//   node server.mjs [options]             serve on stdin/stdout
//   node server.mjs --http ADDR [options] serve Streamable HTTP with sessions at http://ADDR/mcp
//                                         (loopback only; port 0: any free port); prints the
//                                         endpoint URL as the first line of stdout
//   PORT=N node server.mjs [options]      the same as --http 127.0.0.1:N
//
// Options:
//   --ttl MS          keep each task MS milliseconds from its creation (the SDK's in-memory
//                     store then forgets it: tasks/get answers -32602); default 60 s, whatever
//                     the request's `task.ttl` asks (a receiver may choose its own)
//   --session-tasks   over HTTP, a task is seen only by the session that created it (the SDK
//                     store's own binding); by default every session sees every task
//   --log FILE        append every JSON-RPC message received (`<`) and sent (`>`) to FILE
//   --bench           also serve the `bench` and `stats` tools (below), for the CPU benchmark
//
// The tasks are the SDK's: McpServer.experimental.tasks.registerToolTask, its
// InMemoryTaskStore and InMemoryTaskMessageQueue; the SDK answers tasks/get,
// tasks/result, tasks/list and tasks/cancel and sends notifications/tasks/status
// on every change a tool makes. Input comes the 2025-11-25 way: the tool sends
// elicitation/create tagged with its task, which the SDK queues and delivers on
// the client's tasks/result stream.
//
// Tools (execution.taskSupport in brackets):
//   progress    [required]  steps × step_ms, a status message per step
//   fail        [required]  ends `failed`; tasks/result answers JSON-RPC error -32001
//   tool_error  [required]  ends `failed` with an isError result (2025-11-25 reports such a
//                           result as a failed task)
//   confirm     [required]  asks a form ("Export 42 rows?", field `approved`); with rounds: 2
//                           also "A note for the audit log?" (field `note`)
//   forever     [required]  runs until tasks/cancel (or its ttl)
//   summarize   [optional]  a short job: a task when asked for one, else answered inline
//   quick       [forbidden] a plain tool
//
// With --bench, two more:
//   bench       [required]  a task with `pollInterval: 0` that completes on its third
//                           tasks/get (nothing runs in the background, no status
//                           notification is sent), so a lifecycle is exactly tools/call,
//                           3 × tasks/get and tasks/result whatever the client's pace
//   stats       [forbidden] what the server has received, over all sessions: requests by
//                           method, `benchCalls`, `benchGets` (reads of bench tasks),
//                           `benchResults` (their tasks/result), and the JSON-RPC bytes
//                           received and sent (`bytesIn`, `bytesOut`: each message's JSON,
//                           without the stdio newline or the HTTP and SSE framing)

import { appendFileSync } from 'node:fs';
import { createServer } from 'node:http';
import { randomUUID } from 'node:crypto';

import { InMemoryTaskMessageQueue, InMemoryTaskStore, isTerminal } from '@modelcontextprotocol/sdk/experimental/tasks';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { ElicitResultSchema, isInitializeRequest } from '@modelcontextprotocol/sdk/types.js';
import { z } from 'zod';

const POLL_MS = 50;
const DEFAULT_TTL_MS = 60_000;

function option(name) {
    const at = process.argv.indexOf(name);
    return at >= 0 ? (process.argv[at + 1] ?? '') : undefined;
}

const ttlOption = option('--ttl');
const TTL_MS = ttlOption === undefined ? DEFAULT_TTL_MS : Number(ttlOption);
if (!Number.isSafeInteger(TTL_MS) || TTL_MS <= 0) {
    console.error(`--ttl wants a positive number of milliseconds, not ${ttlOption}`);
    process.exit(2);
}
const SESSION_TASKS = process.argv.includes('--session-tasks');
const LOG = option('--log');
const BENCH = process.argv.includes('--bench');

/** What the server has received and sent (--bench only). */
const stats = { requests: {}, benchCalls: 0, benchGets: 0, benchResults: 0, bytesIn: 0, bytesOut: 0 };
/** The open bench tasks: id → reads so far. */
const benchOpen = new Map();
/** Completed bench tasks whose tasks/result has not come yet. */
const benchDone = new Set();
/** Reads of a bench task before it is `completed`. */
const BENCH_READS = 3;

/**
 * Counts a message received, and moves a bench task on: its third tasks/get
 * stores the result first, so that this read answers `completed`. Runs
 * before the SDK sees the message (the store's writes are synchronous).
 */
function countIn(message) {
    stats.bytesIn += Buffer.byteLength(JSON.stringify(message));
    const method = message?.method;
    if (typeof method !== 'string' || message.id === undefined) return;
    stats.requests[method] = (stats.requests[method] ?? 0) + 1;
    const taskId = message.params?.taskId;
    if (method === 'tasks/get' && benchOpen.has(taskId)) {
        const reads = benchOpen.get(taskId) + 1;
        stats.benchGets += 1;
        if (reads < BENCH_READS) {
            benchOpen.set(taskId, reads);
        } else {
            benchOpen.delete(taskId);
            benchDone.add(taskId);
            taskStore.inner.storeTaskResult(taskId, 'completed', {
                ...text(`done after ${BENCH_READS} reads`),
                structuredContent: { reads: BENCH_READS },
            }).catch(() => {});
        }
    } else if (method === 'tasks/result' && benchDone.delete(taskId)) {
        stats.benchResults += 1;
    }
}

function log(direction, session, message) {
    if (!LOG) return;
    const who = session ? ` [${session.slice(0, 8)}]` : '';
    appendFileSync(LOG, `${new Date().toISOString()} ${direction}${who} ${JSON.stringify(message)}\n`);
}

/** JSON-RPC errors a failed task's tasks/result answers with, by task id. */
const failures = new Map();

/**
 * The SDK's in-memory store, shared by every session of the process. Two
 * additions: the session binding is optional (`--session-tasks`), and a task
 * that failed with a JSON-RPC error gives that error from tasks/result (the
 * SDK's store keeps results only, and its tasks/result handler answers with
 * whatever getTaskResult throws).
 */
class PeerTaskStore {
    constructor() {
        this.inner = new InMemoryTaskStore();
    }
    session(sessionId) {
        return SESSION_TASKS ? sessionId : undefined;
    }
    createTask(params, requestId, request, sessionId) {
        return this.inner.createTask(params, requestId, request, this.session(sessionId));
    }
    getTask(taskId, sessionId) {
        return this.inner.getTask(taskId, this.session(sessionId));
    }
    storeTaskResult(taskId, status, result, sessionId) {
        return this.inner.storeTaskResult(taskId, status, result, this.session(sessionId));
    }
    async getTaskResult(taskId, sessionId) {
        const result = await this.inner.getTaskResult(taskId, this.session(sessionId));
        const failure = failures.get(taskId);
        if (failure) throw failure;
        return result;
    }
    updateTaskStatus(taskId, status, statusMessage, sessionId) {
        return this.inner.updateTaskStatus(taskId, status, statusMessage, this.session(sessionId));
    }
    listTasks(cursor, sessionId) {
        return this.inner.listTasks(cursor, this.session(sessionId));
    }
}

const taskStore = new PeerTaskStore();
const taskMessageQueue = new InMemoryTaskMessageQueue();

/** A JSON-RPC error as the SDK sends it: its code, message and data as they are. */
function rpcError(code, message, data) {
    return Object.assign(new Error(message), { code, data });
}

/** Thrown inside a tool's work once its task is cancelled or forgotten. */
const STOPPED = Symbol('stopped');

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
const text = (t) => ({ content: [{ type: 'text', text: t }] });

/**
 * Creates a task for the call and runs `work(job)` in the background: what it
 * returns is the task's result (an isError result ends it `failed`), an error
 * with a numeric `code` is the JSON-RPC error its tasks/result answers.
 */
async function startTask(extra, work) {
    const store = extra.taskStore;
    // The server's ttl: at least the default unless --ttl sets it outright.
    const ttl = ttlOption === undefined ? Math.max(extra.taskRequestedTtl ?? 0, TTL_MS) : TTL_MS;
    const task = await store.createTask({ ttl, pollInterval: POLL_MS });
    const { taskId } = task;
    const alive = async () => {
        const now = await taskStore.getTask(taskId, extra.sessionId);
        if (!now || isTerminal(now.status)) throw STOPPED;
    };
    const job = {
        /** A status message, the task `working`. */
        status: async (message) => {
            await alive();
            await store.updateTaskStatus(taskId, 'working', message);
        },
        /** Waits `ms`, stopping early if the task is cancelled. */
        work: async (ms) => {
            const until = Date.now() + ms;
            for (;;) {
                await alive();
                const left = until - Date.now();
                if (left <= 0) return;
                await sleep(Math.min(20, left));
            }
        },
        /** Asks a form of one required field, through the task (input_required meanwhile). */
        ask: async (message, field, type) => {
            await alive();
            const answer = await extra.sendRequest(
                {
                    method: 'elicitation/create',
                    params: {
                        mode: 'form',
                        message,
                        requestedSchema: { type: 'object', properties: { [field]: { type } }, required: [field] },
                    },
                },
                ElicitResultSchema,
                { relatedTask: { taskId } },
            ).catch(async (error) => {
                await alive();
                throw error;
            });
            await alive();
            await store.updateTaskStatus(taskId, 'working', 'answered');
            return answer;
        },
    };
    work(job)
        .then(
            (result) => store.storeTaskResult(taskId, result.isError ? 'failed' : 'completed', result),
            async (error) => {
                if (error === STOPPED) return;
                if (Number.isSafeInteger(error?.code)) {
                    failures.set(taskId, error);
                    return store.storeTaskResult(taskId, 'failed', { ...text(error.message), isError: true });
                }
                return store.updateTaskStatus(taskId, 'failed', String(error?.message ?? error));
            },
        )
        // Cancelled or forgotten while it stored its end: nothing left to tell.
        .catch(() => {});
    return { task };
}

/**
 * A task tool of the SDK: its work runs as a task; reads are the SDK store's.
 * The SDK calls a handler with `(args, extra)`, or with `(extra)` alone when
 * the tool has no input schema.
 */
function taskTool(work) {
    const split = (a) => (a.length > 1 ? [a[0] ?? {}, a[1]] : [{}, a[0]]);
    return {
        createTask: (...a) => {
            const [args, extra] = split(a);
            return startTask(extra, (job) => work(job, args));
        },
        getTask: (...a) => split(a)[1].taskStore.getTask(split(a)[1].taskId),
        getTaskResult: (...a) => split(a)[1].taskStore.getTaskResult(split(a)[1].taskId),
    };
}

const required = { taskSupport: 'required' };

function build() {
    const server = new McpServer(
        { name: 'legacy-peer', version: '0.0.0' },
        {
            capabilities: {
                tools: {},
                tasks: { list: {}, cancel: {}, requests: { tools: { call: {} } } },
            },
            taskStore,
            taskMessageQueue,
        },
    );
    const tasks = server.experimental.tasks;

    tasks.registerToolTask(
        'progress',
        {
            description: 'steps × step_ms, a status message per step',
            inputSchema: { steps: z.number().int().optional(), step_ms: z.number().int().optional() },
            execution: required,
        },
        taskTool(async (job, args) => {
            const steps = args.steps ?? 3;
            const stepMs = args.step_ms ?? 100;
            await job.status('starting');
            for (let i = 1; i <= steps; i++) {
                await job.work(stepMs);
                await job.status(`step ${i}/${steps}`);
            }
            return { ...text(`done after ${steps} steps`), structuredContent: { steps } };
        }),
    );

    tasks.registerToolTask(
        'fail',
        { description: 'ends failed with JSON-RPC error -32001', execution: required },
        taskTool(async (job) => {
            await job.work(100);
            throw rpcError(-32001, 'the export backend is unavailable', { retryAfterMs: 1000 });
        }),
    );

    tasks.registerToolTask(
        'tool_error',
        { description: 'ends with an isError result', execution: required },
        taskTool(async (job) => {
            await job.work(100);
            return { ...text('the table "orders" does not exist'), isError: true };
        }),
    );

    tasks.registerToolTask(
        'confirm',
        {
            description: 'asks an elicitation form through its task, `rounds` of them',
            inputSchema: { rounds: z.number().int().optional() },
            execution: required,
        },
        taskTool(async (job, args) => {
            await job.status('waiting for confirmation');
            const answer = await job.ask('Export 42 rows?', 'approved', 'boolean');
            if (answer.action !== 'accept' || answer.content?.approved !== true) {
                return text(`not exported ("${answer.action}")`);
            }
            let summary = 'exported 42 rows';
            if ((args.rounds ?? 1) > 1) {
                await job.status('waiting for a note');
                const note = await job.ask('A note for the audit log?', 'note', 'string');
                if (typeof note.content?.note === 'string') summary += ` (note: ${note.content.note})`;
            }
            await job.status('done');
            return text(summary);
        }),
    );

    tasks.registerToolTask(
        'forever',
        { description: 'runs until cancelled', execution: required },
        taskTool(async (job) => {
            await job.status('running until cancelled');
            for (;;) await job.work(1000);
        }),
    );

    tasks.registerToolTask(
        'summarize',
        {
            description: 'a short job: a task when the call asks for one, else answered inline',
            inputSchema: { rows: z.number().int().optional() },
            execution: { taskSupport: 'optional' },
        },
        taskTool(async (job, args) => {
            await job.work(150);
            return text(`summary of ${args.rows ?? 42} rows`);
        }),
    );

    if (BENCH) {
        tasks.registerToolTask(
            'bench',
            { description: 'a task that completes on its third tasks/get (for benchmarks)', execution: required },
            {
                createTask: async (extra) => {
                    stats.benchCalls += 1;
                    const task = await extra.taskStore.createTask({ ttl: TTL_MS, pollInterval: 0 });
                    benchOpen.set(task.taskId, 0);
                    return { task };
                },
                getTask: (extra) => extra.taskStore.getTask(extra.taskId),
                getTaskResult: (extra) => extra.taskStore.getTaskResult(extra.taskId),
            },
        );
        server.registerTool('stats', { description: 'what the server has received (for benchmarks)' }, async () => ({
            ...text('stats'),
            structuredContent: structuredClone(stats),
        }));
    }

    server.registerTool(
        'quick',
        { description: 'a plain tool (task support forbidden)', inputSchema: { text: z.string().optional() } },
        async (args) => text(`quick: ${args.text ?? 'ok'}`),
    );

    return server;
}

/** Connects a server to a transport, logging the messages both ways. */
async function serve(server, transport) {
    const send = transport.send.bind(transport);
    transport.send = (message, options) => {
        log('>', transport.sessionId, message);
        if (BENCH) stats.bytesOut += Buffer.byteLength(JSON.stringify(message));
        return send(message, options);
    };
    await server.connect(transport);
    const receive = transport.onmessage;
    transport.onmessage = (message, extra) => {
        log('<', transport.sessionId, message);
        if (BENCH) countIn(message);
        receive?.(message, extra);
    };
}

const LOOPBACK = new Set(['127.0.0.1', 'localhost', '::1']);

/** Streamable HTTP with sessions: one McpServer per session, the tasks shared. */
function serveHttp(addr) {
    const lastColon = addr.lastIndexOf(':');
    const host = addr.slice(0, lastColon).replace(/^\[|\]$/g, '') || '127.0.0.1';
    const port = Number(addr.slice(lastColon + 1));
    if (!LOOPBACK.has(host) || !Number.isSafeInteger(port)) {
        console.error(`serve on a loopback address only (127.0.0.1:PORT), not ${addr}`);
        process.exit(2);
    }
    const sessions = new Map();
    const http = createServer(async (req, res) => {
        try {
            if (new URL(req.url, 'http://x').pathname !== '/mcp') {
                res.writeHead(404).end();
                return;
            }
            const id = req.headers['mcp-session-id'];
            let body;
            if (req.method === 'POST') {
                const chunks = [];
                for await (const chunk of req) chunks.push(chunk);
                try {
                    body = JSON.parse(Buffer.concat(chunks).toString('utf8'));
                } catch {
                    res.writeHead(400, { 'content-type': 'application/json' }).end(
                        JSON.stringify({ jsonrpc: '2.0', id: null, error: { code: -32700, message: 'Parse error' } }),
                    );
                    return;
                }
            }
            let transport = typeof id === 'string' ? sessions.get(id) : undefined;
            if (!transport && id === undefined && req.method === 'POST' && isInitializeRequest(body)) {
                transport = new StreamableHTTPServerTransport({
                    sessionIdGenerator: () => randomUUID(),
                    onsessioninitialized: (sid) => sessions.set(sid, transport),
                });
                transport.onclose = () => {
                    if (transport.sessionId) sessions.delete(transport.sessionId);
                };
                await serve(build(), transport);
            }
            if (!transport) {
                // An unknown session is gone (404); a request before initialize is refused (400).
                const [status, message] = id === undefined ? [400, 'Bad Request: Server not initialized'] : [404, 'Session not found'];
                res.writeHead(status, { 'content-type': 'application/json' }).end(
                    JSON.stringify({ jsonrpc: '2.0', id: null, error: { code: -32000, message } }),
                );
                return;
            }
            await transport.handleRequest(req, res, body);
        } catch (error) {
            if (!res.headersSent) res.writeHead(500);
            res.end(String(error));
        }
    });
    http.listen(port, host, () => {
        const { port: bound } = http.address();
        const shown = host.includes(':') ? `[${host}]` : host;
        process.stdout.write(`http://${shown}:${bound}/mcp\n`);
    });
}

const httpAt = option('--http');
if (httpAt !== undefined) serveHttp(httpAt || '127.0.0.1:0');
else if (process.env.PORT) serveHttp(`127.0.0.1:${process.env.PORT}`);
else await serve(build(), new StdioServerTransport());

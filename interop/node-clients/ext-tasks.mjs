// The `@modelcontextprotocol/ext-tasks` 0.2 requester, on the TypeScript SDK 2
// client (`@modelcontextprotocol/client`), driving a 2026-07-28 Tasks server's
// `bench` task over Streamable HTTP, for the CPU benchmark
// (`interop/benches/clients.rs`).
//
//   node ext-tasks.mjs --http URL [--arguments JSON]
//
// then the command loop or the one-shot run of harness.mjs. The SDK client
// connects with the era pinned to 2026-07-28 (its `server/discover` probe) and
// declares the Tasks extension. ext-tasks needs a raw request path for the
// task traffic on that era (the SDK's codecs refuse a task result): its
// documentation asks the host for `rawDispatch`, a coordinator that owns the
// request ids and matches the responses, with the framing the client
// connected with. Here that coordinator is a second instance of the SDK's own
// `StreamableHTTPClientTransport` (so the task requests get the SDK's HTTP
// code, headers and SSE parsing) with a map from request id to waiter.
//
// One lifecycle: `session.callTool("bench", arguments)`, then
// `execution.settle()` and `resultFromTaskOutcome`, as the package's README
// shows. ext-tasks polls at the server's `pollIntervalMs`, floored at 10 ms,
// and at 1 s when the server gives none: run it against a bench task that
// carries a hint (`--arguments '{"poll_ms": 10}'`).

import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { createTaskSessionFromClient, resultFromTaskOutcome } from '@modelcontextprotocol/ext-tasks/client';

import { drive, expectBenchResult, option } from './harness.mjs';

const url = new URL(option('--http'));
const args = JSON.parse(option('--arguments') ?? '{}');

const protocolVersion = '2026-07-28';
const clientInfo = { name: 'ext-tasks-bench', version: '0.2.2' };
const clientCapabilities = { extensions: { 'io.modelcontextprotocol/tasks': {} } };

const client = new Client(clientInfo, {
    capabilities: clientCapabilities,
    versionNegotiation: { mode: { pin: protocolVersion } },
});
await client.connect(new StreamableHTTPClientTransport(url));

/** The host's raw request coordinator: its own ids, its own response matching. */
function rawCoordinator() {
    const transport = new StreamableHTTPClientTransport(url);
    const waiting = new Map();
    let next = 0;
    transport.onmessage = (message) => {
        const waiter = message.id === undefined ? undefined : waiting.get(message.id);
        if (!waiter) return;
        waiting.delete(message.id);
        waiter.resolve(message.error ? { kind: 'error', error: message.error } : { kind: 'result', result: message.result });
    };
    transport.onerror = (error) => {
        for (const waiter of waiting.values()) waiter.reject(error);
        waiting.clear();
    };
    const dispatch = (request) =>
        new Promise((resolve, reject) => {
            const id = `raw-${next++}`;
            waiting.set(id, { resolve, reject });
            transport.send({ ...request, jsonrpc: '2.0', id }).catch((error) => {
                waiting.delete(id);
                reject(error);
            });
        });
    return { transport, dispatch };
}

const raw = rawCoordinator();
await raw.transport.start();

const session = createTaskSessionFromClient(client, {
    endpointId: url.href,
    rawDispatch: raw.dispatch,
    v2RequestFraming: { protocolVersion, clientInfo, clientCapabilities },
});

async function lifecycle() {
    const execution = await session.callTool('bench', args);
    const { outcome } = await execution.settle();
    expectBenchResult(resultFromTaskOutcome(outcome));
}

async function stats() {
    return (await client.callTool({ name: 'stats', arguments: {} })).structuredContent;
}

await drive({
    lifecycle,
    stats,
    close: async () => {
        await session.close();
        await raw.transport.close();
        await client.close();
    },
});

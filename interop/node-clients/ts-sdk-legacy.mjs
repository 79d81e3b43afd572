// The TypeScript SDK 1.32 client (`@modelcontextprotocol/sdk`, its experimental
// 2025-11-25 tasks) driving the legacy peer's `bench` task, for the CPU benchmark
// (`interop/benches/clients.rs`).
//
//   node ts-sdk-legacy.mjs --stdio        spawns `node ../legacy-peer/server.mjs --bench`
//   node ts-sdk-legacy.mjs --http URL     the legacy peer (started with --bench) at URL
//
// then the command loop or the one-shot run of harness.mjs. One lifecycle is the
// SDK's own wait helper, `client.experimental.tasks.callToolStream`, read to its
// `result` message: `tools/call` with `task`, `tasks/get` until the task is
// terminal (sleeping the task's `pollInterval`, 0 here, between reads), then
// `tasks/result`. The client lists the tools once after connecting, which is how
// the SDK learns that `bench` wants the `task` opt-in.

import { fileURLToPath } from 'node:url';

import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';

import { drive, expectBenchResult, option } from './harness.mjs';

const url = option('--http');
const transport = url
    ? new StreamableHTTPClientTransport(new URL(url))
    : new StdioClientTransport({
          command: process.execPath,
          args: [fileURLToPath(new URL('../legacy-peer/server.mjs', import.meta.url)), '--bench'],
          stderr: 'ignore',
      });

const client = new Client({ name: 'ts-sdk-bench', version: '1.32.2' });
await client.connect(transport);
await client.listTools();

async function lifecycle() {
    let result;
    for await (const message of client.experimental.tasks.callToolStream({ name: 'bench', arguments: {} })) {
        if (message.type === 'result') result = message.result;
        else if (message.type === 'error') throw message.error;
    }
    expectBenchResult(result);
}

async function stats() {
    return (await client.callTool({ name: 'stats', arguments: {} })).structuredContent;
}

await drive({ lifecycle, stats, close: () => client.close() });

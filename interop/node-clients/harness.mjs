// The measuring loop the client scripts share.
//
// A script connects its client, then hands `drive` one lifecycle (an async
// function that runs a task to its typed result and checks it) and a way to
// read the server's `stats` tool. Two ways to run it:
//
//   node SCRIPT.mjs … --n N [--warmup W]   W lifecycles (default N/10), then N measured:
//                                          one JSON line on stdout, then exit
//   node SCRIPT.mjs …                      commands on stdin, one JSON line per command:
//       check    1 lifecycle, stats, 1 lifecycle, stats, 2 lifecycles, stats:
//                {"stats": [s0, s1, s2]}
//       run N    N lifecycles, measured
//       (end of input: close and exit)
//
// A measurement is this process's CPU over the N lifecycles, both from
// `process.cpuUsage()` (µs) and from `/proc/self/stat` (utime and stime in
// clock ticks, as the Rust side reads its own), and the wall time:
//   {"n": N, "userUs": …, "sysUs": …, "statUserTicks": …, "statSysTicks": …, "wallUs": …}

import { readFileSync } from 'node:fs';
import { createInterface } from 'node:readline';

/** utime and stime of this process, in clock ticks. */
function statTicks() {
    const stat = readFileSync('/proc/self/stat', 'utf8');
    // The fields after the command (which may hold spaces and parentheses).
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return [Number(fields[11]), Number(fields[12])];
}

async function measure(lifecycle, n) {
    const [u0, s0] = statTicks();
    const cpu0 = process.cpuUsage();
    const t0 = process.hrtime.bigint();
    for (let i = 0; i < n; i++) await lifecycle();
    const wallUs = Number(process.hrtime.bigint() - t0) / 1e3;
    const cpu = process.cpuUsage(cpu0);
    const [u1, s1] = statTicks();
    return { n, userUs: cpu.user, sysUs: cpu.system, statUserTicks: u1 - u0, statSysTicks: s1 - s0, wallUs };
}

async function check(lifecycle, stats) {
    // A first lifecycle may do one-time work (a listing, a declaration).
    await lifecycle();
    const s0 = await stats();
    await lifecycle();
    const s1 = await stats();
    await lifecycle();
    await lifecycle();
    const s2 = await stats();
    return { stats: [s0, s1, s2] };
}

/** Runs the command loop, or the one-shot measurement when `--n` is given. */
export async function drive({ lifecycle, stats, close }) {
    const at = process.argv.indexOf('--n');
    if (at >= 0) {
        const n = Number(process.argv[at + 1]);
        const w = process.argv.indexOf('--warmup');
        const warmup = w >= 0 ? Number(process.argv[w + 1]) : Math.floor(n / 10);
        for (let i = 0; i < warmup; i++) await lifecycle();
        process.stdout.write(`${JSON.stringify(await measure(lifecycle, n))}\n`);
        await close();
        return;
    }
    const lines = createInterface({ input: process.stdin });
    for await (const line of lines) {
        const [command, arg] = line.trim().split(/\s+/);
        let answer;
        if (command === 'check') answer = await check(lifecycle, stats);
        else if (command === 'run') answer = await measure(lifecycle, Number(arg));
        else answer = { error: `unknown command ${JSON.stringify(line)}` };
        process.stdout.write(`${JSON.stringify(answer)}\n`);
    }
    await close();
}

/** The value of `--name VALUE`, if given. */
export function option(name) {
    const at = process.argv.indexOf(name);
    return at >= 0 ? process.argv[at + 1] : undefined;
}

/** Fails the run when a lifecycle ended with anything but the bench tool's result. */
export function expectBenchResult(result) {
    if (result?.structuredContent?.reads !== 3) {
        throw new Error(`unexpected bench result: ${JSON.stringify(result)}`);
    }
}

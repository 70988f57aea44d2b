/**
 * One name, N contenders in this process, each with its own `Holdfast` client and ioredis connection, looping
 * acquire → hold 1 ms → release for a while; prints the distribution of waits, overall and of the waits that began
 * after the first 200 ms (the start-up: every client's first connections and subscription), and the bound
 * 20 × (hold + hand-off) with one cycle = 1/acquisitions per second. A smaller, longer-running companion of the
 * contended section of `npm run bench:throughput`, for looking at the plain Lock's waits alone.
 *
 *   npm run build && npx tsx bench/contended-loop.ts [--contenders 8] [--ms 3000] [--fair] [--signal]
 *
 * `--signal` passes one AbortSignal (never aborted) to every acquisition, as the contended section does.
 */
import { parseArgs } from 'node:util';
import { Redis } from 'ioredis';
import { Holdfast } from './holdfast.js';
import { RedisServer } from '../test/support/redis-server.js';

const { values } = parseArgs({
  options: { contenders: { type: 'string', default: '8' }, ms: { type: 'string', default: '3000' }, fair: { type: 'boolean', default: false }, signal: { type: 'boolean', default: false } },
});
const N = Number(values.contenders);
const RUN_MS = Number(values.ms);
const STARTUP_MS = 200;
const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

const server = await RedisServer.start();
const clients = Array.from({ length: N }, () => {
  const io = new Redis(server.url);
  return { io, holdfast: new Holdfast({ redis: io, prefix: 'loop:' }) };
});
await Promise.all(clients.map((c) => c.io.ping()));
const waits: { at: number; ms: number }[] = [];
const holds: number[] = [];
const t0 = performance.now();
const stopAt = t0 + RUN_MS;
const signal = values.signal ? new AbortController().signal : undefined;
await Promise.all(
  clients.map(async ({ holdfast }) => {
    const lock = values.fair ? holdfast.fairLock('hot') : holdfast.lock('hot');
    while (performance.now() < stopAt) {
      const started = performance.now();
      const held = await lock.acquire(signal ? { signal } : undefined);
      const at = performance.now();
      waits.push({ at: started - t0, ms: at - started });
      await sleep(1);
      holds.push(performance.now() - at);
      await held.release();
    }
  }),
);
const elapsed = performance.now() - t0;
const q = (xs: number[], p: number): number => xs[Math.min(xs.length - 1, Math.floor(xs.length * p))] ?? NaN;
const all = waits.map((w) => w.ms).sort((a, b) => a - b);
const begun = waits.filter((w) => w.at >= STARTUP_MS).map((w) => w.ms).sort((a, b) => a - b);
const perSec = (waits.length / elapsed) * 1000;
const meanHold = holds.reduce((a, b) => a + b, 0) / holds.length;
console.log(
  `${values.fair ? 'FairLock' : 'Lock'}, ${N} contenders, own client each, ${RUN_MS} ms: ${perSec.toFixed(0)} acquisitions/s, mean hold ${meanHold.toFixed(2)} ms\n` +
    `waits, all: p50 ${q(all, 0.5).toFixed(1)} p99 ${q(all, 0.99).toFixed(1)} max ${(all.at(-1) ?? NaN).toFixed(1)} ms\n` +
    `waits begun after ${STARTUP_MS} ms: p50 ${q(begun, 0.5).toFixed(1)} p99 ${q(begun, 0.99).toFixed(1)} max ${(begun.at(-1) ?? NaN).toFixed(1)} ms\n` +
    `20 × cycle: ${(20 * (1000 / perSec)).toFixed(1)} ms`,
);
for (const c of clients) {
  await c.holdfast.close();
  c.io.disconnect();
}
await server.stop();

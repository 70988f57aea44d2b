/**
 * The uncontended Lock cycle (acquire + release, ioredis, one at a time) with `holdfast/otel` on, alone, for a CPU
 * profile of what the bridge adds:
 *
 *   node --cpu-prof --cpu-prof-dir=results/tmp --import tsx bench/profile-otel.ts [--mode spans] [--seconds 10] [--rev <rev>]
 *   npx tsx bench/top-frames.ts results/tmp/CPU.<…>.0.<n>.cpuprofile 25
 *
 * `--mode`: `spans` (metrics and spans, the default), `metrics` (`spans: false`), `channels` (no subscriber), `bare`
 * (the channel hooks passed straight through). `--rev`: bundle that revision's `src/` instead of the work tree's.
 * `--processor simple`: a `SimpleSpanProcessor` instead of the `BatchSpanProcessor`.
 * The bundles (kept in results/tmp/otel-profile-<rev>/) carry source maps, so top-frames names the src/ line of each
 * frame. Starts its own redis-server;
 * prints cycles/s and client CPU per cycle.
 */
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { Redis } from 'ioredis';
import { RedisServer } from '../test/support/redis-server.js';
import { bundle, checkout, ROOT, sdk } from './diagnostics-support.js';

const { values } = parseArgs({
  options: {
    mode: { type: 'string', default: 'spans' },
    seconds: { type: 'string', default: '10' },
    rev: { type: 'string' },
    processor: { type: 'string', default: 'batch' },
  },
});
const mode = values.mode;
if (!['spans', 'metrics', 'channels', 'bare'].includes(mode)) throw new TypeError(`--mode: spans, metrics, channels or bare, got ${mode}`);

// kept after the run: top-frames reads the bundles' source maps
const work = join(ROOT, 'results/tmp', `otel-profile-${values.rev ?? 'worktree'}`);
const built = await bundle(checkout(values.rev, join(work, 'src')), join(work, 'dist', 'build'));
const { Holdfast } = (await import(mode === 'bare' ? built.bare : built.lib)) as {
  Holdfast: new (o: { redis: Redis; prefix: string }) => { lock(n: string): { acquire(): Promise<{ release(): Promise<void> }> }; close(): Promise<void> };
};
const otel = sdk(values.processor === 'simple' ? 'simple' : 'batch');
let instrumentation: { disable(): void } | undefined;
if (mode === 'spans' || mode === 'metrics') {
  const { instrumentHoldfast } = (await import(built.otel)) as { instrumentHoldfast: (o: unknown) => { disable(): void } };
  instrumentation = instrumentHoldfast({ tracerProvider: otel.tracerProvider, meterProvider: otel.meterProvider, spans: mode === 'spans' });
}
const server = await RedisServer.start();
const redis = new Redis(server.url);
const hf = new Holdfast({ redis, prefix: 'profile:' });
try {
  const lock = hf.lock('l');
  const cycle = async (): Promise<void> => {
    await (await lock.acquire()).release();
  };
  for (let i = 0; i < 2000; i++) await cycle();
  const until = performance.now() + Number(values.seconds) * 1000;
  const cpu0 = process.cpuUsage();
  const t0 = performance.now();
  let n = 0;
  while (performance.now() < until) {
    for (let i = 0; i < 100; i++) await cycle();
    n += 100;
  }
  const ms = performance.now() - t0;
  const cpu = process.cpuUsage(cpu0);
  console.log(`${mode}${values.rev ? ` @${values.rev}` : ''} (${values.processor}): ${((n / ms) * 1000).toFixed(0)} cycles/s (${n} cycles), client CPU ${((cpu.user + cpu.system) / n).toFixed(1)} µs/cycle`);
} finally {
  instrumentation?.disable();
  await hf.close();
  redis.disconnect();
  await server.stop();
  await otel.shutdown();
}

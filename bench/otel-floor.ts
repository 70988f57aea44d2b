/**
 * Micro-measurements of what an uncontended acquire+release costs `holdfast/otel` and the OpenTelemetry SDK under it,
 * each against the client CPU of one bare Lock cycle (the channel hooks passed straight through) measured in the same
 * run:
 *
 * - **fingerprint**: one `fingerprint(owner)` (SHA-256 of a fresh owner id);
 * - **SDK: hold span (batch)** — the least the SDK does for a hold span: `startSpan` with its attributes and start
 *   time, one `setAttribute`, `end(time)`, on a `BatchSpanProcessor` (what production runs) whose exporter drops
 *   the batches; **(simple)** the same on a `SimpleSpanProcessor` with an `InMemorySpanExporter` (what tests run);
 * - **SDK: histogram records** — the wait and hold histograms, attributes made once, and one counter add (what the
 *   acquisitions counter cost per cycle while it was a synchronous counter);
 * - **bridge (metrics)** and **bridge (metrics+spans)** — the bridge's own subscribers fed one acquire and one
 *   release `asyncEnd` each, built the way the library builds them: the bridge and the SDK, no Redis;
 * - **publish side** — `traceAcquire` + `traceRelease` around an already-settled operation, with one subscriber to
 *   each tracing channel's `asyncEnd` that does nothing, minus the same with no subscriber.
 *
 * Each figure is CPU µs per operation, the median of `--reps` runs of `--ops` operations (yielding to the event loop
 * every 100, so the batch processor exports and timers run). The bare cycle runs against a redis-server this script
 * starts.
 *
 *   npx tsx bench/otel-floor.ts [--rev <rev>] [--ops 20000] [--reps 9]
 */
import dc from 'node:diagnostics_channel';
import { join } from 'node:path';
import { setImmediate as yieldLoop } from 'node:timers/promises';
import { parseArgs } from 'node:util';
import { build } from 'esbuild';
import { Redis } from 'ioredis';
import { AggregationTemporality, InMemoryMetricExporter, MeterProvider, PeriodicExportingMetricReader } from '@opentelemetry/sdk-metrics';
import { BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base';
import type { Attributes, Tracer } from '@opentelemetry/api';
import { RedisServer } from '../test/support/redis-server.js';
import { bundle, checkout, ROOT, sdk } from './diagnostics-support.js';

const { values } = parseArgs({ options: { rev: { type: 'string' }, ops: { type: 'string', default: '20000' }, reps: { type: 'string', default: '9' } } });
const OPS = Number(values.ops);
const REPS = Number(values.reps);

const work = join(ROOT, 'results/tmp', `otel-floor-${values.rev ?? 'worktree'}`);
const dir = checkout(values.rev, join(work, 'src'));
const built = await bundle(dir, join(work, 'dist', 'build'));
// the hooks themselves, for the publish side
await build({ entryPoints: [join(dir, 'src/internal/trace.ts')], outfile: join(work, 'dist', 'trace.js'), bundle: true, platform: 'node', format: 'esm', packages: 'external', logLevel: 'error' });
type Traced = { diagnostics(): unknown };
const hooks = (await import(join(work, 'dist', 'trace.js'))) as {
  traceAcquire(kind: string, name: string, options: unknown, run: (t: unknown) => Promise<unknown>): Promise<unknown>;
  traceRelease(held: Traced, run: () => Promise<void>): Promise<void>;
};
const lib = (await import(built.lib)) as { fingerprint(owner: string): string };
const { instrumentHoldfast } = (await import(built.otel)) as { instrumentHoldfast: (o: unknown) => { disable(): void } };

/** CPU µs per op: the median over REPS runs of OPS ops. */
async function measure(op: (i: number) => unknown): Promise<number> {
  for (let i = 0; i < 2000; i++) await op(i);
  const runs: number[] = [];
  let i = 0;
  for (let r = 0; r < REPS; r++) {
    const cpu0 = process.cpuUsage();
    for (let n = 0; n < OPS; n += 100) {
      for (let k = 0; k < 100; k++) await op(i++);
      await yieldLoop();
    }
    const cpu = process.cpuUsage(cpu0);
    runs.push((cpu.user + cpu.system) / OPS);
  }
  return runs.sort((a, b) => a - b)[Math.floor(REPS / 2)]!;
}
const sync =
  (op: (i: number) => void) =>
  (i: number): void =>
    op(i);

const rows: [string, number][] = [];

// the reference: one bare Lock cycle
{
  const server = await RedisServer.start();
  const redis = new Redis(server.url);
  const { Holdfast } = (await import(built.bare)) as {
    Holdfast: new (o: unknown) => { lock(n: string): { acquire(): Promise<{ release(): Promise<void> }> }; close(): Promise<void> };
  };
  const hf = new Holdfast({ redis, prefix: 'floor:' });
  const lock = hf.lock('l');
  rows.push(['bare Lock cycle (reference)', await measure(async () => (await lock.acquire()).release())]);
  await hf.close();
  redis.disconnect();
  await server.stop();
}

rows.push(['fingerprint(owner)', await measure(sync((i) => lib.fingerprint(`3f1c2a9e-5b7d-4c1e-9a2b-0c8d7e6f5a4b:${i}`)))]);

const holdAttrs = (i: number): Attributes => ({
  'holdfast.kind': 'lock',
  'holdfast.lock.name': 'l',
  'holdfast.acquire.attempts': 1,
  'holdfast.acquire.waited_ms': 0.12,
  'holdfast.owner.fingerprint': '0123456789ab',
  'holdfast.token': i,
  'holdfast.hold_count': 1,
});
const spanCycle = (tracer: Tracer) => (i: number) => {
  const span = tracer.startSpan('holdfast.hold', { startTime: performance.now(), attributes: holdAttrs(i) });
  span.setAttribute('holdfast.hold.end', 'released');
  span.end(performance.now());
};
{
  const otel = sdk();
  rows.push(['SDK: hold span (BatchSpanProcessor)', await measure(sync(spanCycle(otel.tracerProvider.getTracer('floor'))))]);
  await otel.shutdown();
}
{
  const exporter = new InMemorySpanExporter();
  const provider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] });
  const cycle = spanCycle(provider.getTracer('floor'));
  rows.push([
    'SDK: hold span (SimpleSpanProcessor + InMemorySpanExporter)',
    await measure((i) => {
      if (i % 1000 === 0) exporter.reset();
      cycle(i);
    }),
  ]);
  await provider.shutdown();
}
{
  const meterProvider = new MeterProvider({
    readers: [new PeriodicExportingMetricReader({ exporter: new InMemoryMetricExporter(AggregationTemporality.DELTA), exportIntervalMillis: 1000 })],
  });
  const meter = meterProvider.getMeter('floor');
  const wait = meter.createHistogram('w', { unit: 's' });
  const hold = meter.createHistogram('h', { unit: 's' });
  const count = meter.createCounter('c');
  const byOutcome = { 'holdfast.kind': 'lock', 'holdfast.acquire.outcome': 'acquired' };
  const byEnd = { 'holdfast.kind': 'lock', 'holdfast.hold.end': 'released' };
  rows.push([
    'SDK: wait + hold histogram records',
    await measure(
      sync(() => {
        wait.record(0.0001, byOutcome);
        hold.record(0.0001, byEnd);
      }),
    ),
  ]);
  rows.push(['SDK: one counter add (the acquisitions counter, before it was observable)', await measure(sync(() => count.add(1, byOutcome)))]);
  await meterProvider.shutdown();
}

// the bridge's subscribers, fed what the library publishes for one cycle
const acquireEnd = dc.channel('tracing:holdfast:acquire:asyncEnd');
const releaseEnd = dc.channel('tracing:holdfast:release:asyncEnd');
for (const spans of [false, true]) {
  const otel = sdk();
  const instrumentation = instrumentHoldfast({ tracerProvider: otel.tracerProvider, meterProvider: otel.meterProvider, spans });
  rows.push([
    `bridge (${spans ? 'metrics+spans' : 'metrics'}), no Redis`,
    await measure(
      sync((i) => {
        const fp = '0123456789ab';
        acquireEnd.publish({ id: i, kind: 'lock', name: 'l', fingerprint: fp, attempts: 1, waitedMs: 0.12, outcome: 'acquired', token: i, holdCount: 1, permits: undefined });
        releaseEnd.publish({ id: i, kind: 'lock', name: 'l', fingerprint: fp, token: i, heldMs: 0.05, outcome: 'released' });
      }),
    ),
  ]);
  instrumentation.disable();
  await otel.shutdown();
}

// the publish side: the hooks around a settled operation, with and without an (empty) asyncEnd subscriber
{
  let n = 0;
  // a fresh owner per acquisition, as an uncontended cycle has; its facts carry the owner (what earlier revisions
  // hash) and a fingerprint hashed when read (what a hold gives now)
  const held: Traced = {
    diagnostics: () => {
      const owner = `3f1c2a9e-5b7d-4c1e-9a2b-0c8d7e6f5a4b:${++n}`;
      return {
        kind: 'lock',
        name: 'l',
        owner,
        get fingerprint() {
          return lib.fingerprint(owner);
        },
        token: n,
        holdCount: 1,
      };
    },
  };
  const cycle = async (): Promise<void> => {
    await hooks.traceAcquire('lock', 'l', undefined, () => Promise.resolve(held));
    await hooks.traceRelease(held, () => Promise.resolve());
  };
  const without = await measure(cycle);
  const handlers = { asyncEnd: () => {} };
  const acquire = dc.tracingChannel('holdfast:acquire');
  const release = dc.tracingChannel('holdfast:release');
  acquire.subscribe(handlers as never);
  release.subscribe(handlers as never);
  const withSubscriber = await measure(cycle);
  acquire.unsubscribe(handlers as never);
  release.unsubscribe(handlers as never);
  rows.push(['publish side (an empty asyncEnd subscriber − none)', withSubscriber - without]);
}

const reference = rows[0]![1];
console.log(`$ npx tsx bench/otel-floor.ts${process.argv.length > 2 ? ` ${process.argv.slice(2).join(' ')}` : ''}\n`);
console.log(`CPU µs per operation (median of ${REPS} runs of ${OPS}), Node ${process.version}\n`);
console.log('| operation | CPU µs | % of a bare cycle |\n|---|---:|---:|');
for (const [name, us] of rows) console.log(`| ${name} | ${us.toFixed(2)} | ${((us / reference) * 100).toFixed(1)} |`);

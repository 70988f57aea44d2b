/**
 * What the diagnostics channels and `holdfast/otel` cost on the hot path: the uncontended Lock cycle (acquire +
 * release, one at a time, ioredis, against a redis-server this script starts) of
 *
 * - **bare**: this work tree's `src/` with the channel hooks passed straight through (src/internal/trace.ts replaced
 *   by calls of the wrapped function: the library as if the channels were not there), the reference of every ratio;
 * - **no subscriber**: the same `src/` as built, nobody subscribed to the channels;
 * - **empty subscriber** (with `--modes`): the same, with a subscriber to both tracing channels' `asyncEnd` that does
 *   nothing: what the publishing side costs once anyone listens;
 * - **metrics**: the same, with `holdfast/otel` recording metrics only (`spans: false`);
 * - **metrics+spans**: the same, with `holdfast/otel` recording metrics and spans (its defaults).
 *
 * `holdfast/otel` runs on the OpenTelemetry SDK as a service runs it (bench/diagnostics-support.ts): a tracer provider
 * with a `BatchSpanProcessor` and a meter provider with a periodic reader; the exporters drop what they get.
 * `--before <rev>` adds the same three contenders built from that revision's `src/` (against its own bare build):
 * the work tree and the revision side by side.
 *
 * Every build is bundled with the same esbuild settings. Each contender is compared with its bare build in a child
 * process of its own (the channels are global to a process; subscribing and unsubscribing between blocks would
 * itself cost, as Node swaps a channel's prototype on the first subscriber and the last), each library over its own
 * ioredis connection. A shared 2-core machine drifts by tens of percent within seconds, so the two run in short
 * interleaved blocks (ABBA) and the ratio is taken per pair of blocks; the contenders' processes take turns, in
 * `--chunks` turns of `rounds / chunks` pairs each. The table gives the median ratio over pairs, its interquartile
 * range, and the medians of cycles/s and client CPU per cycle.
 *
 *   npx tsx bench/diagnostics.ts [--block 300] [--rounds 120] [--chunks 3] [--before <rev>] [--modes a,b,…]
 *
 * `--modes` picks the contenders (default `no subscriber,metrics,metrics+spans`). Three more: `empty subscriber`;
 * `sdk: metrics` and `sdk: metrics+spans`, the SDK's own floor in the cycle: the bare build, no channel subscriber, its
 * cycle feeding the SDK directly what the bridge gives it per cycle (the wait and hold histogram records, attribute
 * objects made once; and a hold span with the bridge's attributes, started when the acquisition returns and ended at
 * the release), with no fingerprint, no channel, no bookkeeping.
 * `--ab` (with `--before`) adds a direct comparison per contender: the work tree against the revision, each with its
 * own bridge, in one process, the bridge of each side subscribed only for its own blocks (subscribing happens
 * outside the timed block).
 */
import { execFileSync } from 'node:child_process';
import dc from 'node:diagnostics_channel';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { Redis } from 'ioredis';
import { RedisServer } from '../test/support/redis-server.js';
import { bundle, checkout, ROOT, sdk, type Bundle } from './diagnostics-support.js';

const { values } = parseArgs({
  options: {
    block: { type: 'string', default: '300' },
    rounds: { type: 'string', default: '120' },
    chunks: { type: 'string', default: '3' },
    before: { type: 'string' },
    modes: { type: 'string', default: 'no subscriber,metrics,metrics+spans' },
    ab: { type: 'boolean', default: false },
    // internal: run one comparison in this (child) process
    child: { type: 'string' },
  },
});
const BLOCK = Number(values.block);
const ROUNDS = Number(values.rounds);
const CHUNKS = Number(values.chunks);

type Mode = 'no subscriber' | 'empty subscriber' | 'metrics' | 'metrics+spans' | 'sdk: metrics' | 'sdk: metrics+spans';
const ALL_MODES: readonly Mode[] = ['no subscriber', 'empty subscriber', 'metrics', 'metrics+spans', 'sdk: metrics', 'sdk: metrics+spans'];
const MODES = values.modes.split(',').map((m) => m.trim()) as Mode[];
for (const m of MODES) if (!ALL_MODES.includes(m)) throw new TypeError(`--modes: ${ALL_MODES.join(', ')}; got ${m}`);

/** What a child process runs: one contender against its bare build, or against `reference` in the same mode. */
interface Job {
  mode: Mode;
  build: Bundle;
  reference?: Bundle;
  url: string;
  rounds: number;
}
/** What it reports, per pair of blocks. */
interface Result {
  ratios: number[];
  cpuRatios: number[];
  perSec: number[];
  barePerSec: number[];
  cpu: number[];
  bareCpu: number[];
}

interface HoldfastLike {
  lock(name: string): { acquire(): Promise<{ release(): Promise<void> }> };
  close(): Promise<void>;
}
type Cycle = () => Promise<void>;

async function block(cycle: Cycle): Promise<{ ms: number; cpuUs: number }> {
  const cpu0 = process.cpuUsage();
  const t0 = performance.now();
  for (let i = 0; i < BLOCK; i++) await cycle();
  const cpu = process.cpuUsage(cpu0);
  return { ms: performance.now() - t0, cpuUs: cpu.user + cpu.system };
}
const quantile = (xs: readonly number[], q: number): number => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor(s.length * q))] ?? 0;
};

if (values.child !== undefined) {
  process.stdout.write(JSON.stringify(await child(JSON.parse(values.child) as Job)));
} else {
  await main();
}

async function main(): Promise<void> {
  const work = mkdtempSync(join(tmpdir(), 'holdfast-bench-'));
  const builds: { label: string; build: Bundle }[] = [];
  const server = await RedisServer.start();
  const results = new Map<string, Result>();
  try {
    const head = execFileSync('git', ['-C', ROOT, 'rev-parse', '--short', 'HEAD']).toString().trim();
    const dirty = execFileSync('git', ['-C', ROOT, 'status', '--porcelain', 'src']).toString().trim() !== '';
    builds.push({ label: `work tree (${head}${dirty ? ' + changes' : ''})`, build: await bundle(ROOT, join(work, 'current')) });
    if (values.before !== undefined) {
      const rev = execFileSync('git', ['-C', ROOT, 'rev-parse', '--short', values.before]).toString().trim();
      builds.push({ label: rev, build: await bundle(checkout(values.before, join(work, 'before-src')), join(work, 'before')) });
    }
    const jobs: { key: string; mode: Mode; build: Bundle; reference?: Bundle }[] = builds.flatMap((b) => MODES.map((mode) => ({ key: `${b.label}\0${mode}`, mode, build: b.build })));
    if (values.ab && builds[1]) for (const mode of MODES) jobs.push({ key: `ab\0${mode}`, mode, build: builds[0]!.build, reference: builds[1].build });
    for (let chunk = 0; chunk < CHUNKS; chunk++) {
      const rounds = Math.floor(ROUNDS / CHUNKS) + (chunk < ROUNDS % CHUNKS ? 1 : 0);
      for (const job of chunk % 2 === 0 ? jobs : [...jobs].reverse()) {
        const spec: Job = { mode: job.mode, build: job.build, ...(job.reference ? { reference: job.reference } : {}), url: server.url, rounds };
        const out = execFileSync(
          process.execPath,
          ['--import', 'tsx', join(ROOT, 'bench/diagnostics.ts'), '--child', JSON.stringify(spec), '--block', String(BLOCK)],
          { stdio: ['ignore', 'pipe', 'inherit'] },
        );
        const part = JSON.parse(out.toString()) as Result;
        const into = results.get(job.key);
        if (!into) results.set(job.key, part);
        else for (const k of Object.keys(part) as (keyof Result)[]) into[k].push(...part[k]);
      }
    }
  } finally {
    await server.stop();
    rmSync(work, { recursive: true, force: true });
  }
  const args = process.argv
    .slice(2)
    .map((a) => (/^[\w,.=/+-]+$/.test(a) ? a : `'${a}'`))
    .join(' ');
  console.log(`$ npx tsx bench/diagnostics.ts${args ? ` ${args}` : ''}\n`);
  console.log(
    `Uncontended Lock acquire+release (ioredis, local redis-server), ${ROUNDS} pairs of ${BLOCK}-cycle blocks per contender ` +
      `against the bare build (channel hooks passed through), interleaved, in ${CHUNKS} turns; Node ${process.version}\n`,
  );
  const rows = [
    '| build | contender | cycles/s | bare cycles/s | client CPU µs/cycle | bare CPU µs/cycle | time ÷ bare, median (IQR) | CPU ÷ bare, median (IQR) |',
    '|---|---|---:|---:|---:|---:|---:|---:|',
  ];
  const range = (xs: number[]): string => `**${quantile(xs, 0.5).toFixed(3)}** (${quantile(xs, 0.25).toFixed(3)}–${quantile(xs, 0.75).toFixed(3)})`;
  for (const b of builds) {
    for (const mode of MODES) {
      const r = results.get(`${b.label}\0${mode}`)!;
      rows.push(
        `| ${b.label} | ${mode} | ${quantile(r.perSec, 0.5).toFixed(0)} | ${quantile(r.barePerSec, 0.5).toFixed(0)} | ${quantile(r.cpu, 0.5).toFixed(1)} | ` +
          `${quantile(r.bareCpu, 0.5).toFixed(1)} | ${range(r.ratios)} | ${range(r.cpuRatios)} |`,
      );
    }
  }
  console.log(rows.join('\n'));
  if (values.ab && builds[1]) {
    console.log(`\nThe work tree against ${builds[1].label}, each with its own bridge (same process, interleaved blocks):\n`);
    const ab = [
      `| contender | work tree cycles/s | ${builds[1].label} cycles/s | work tree CPU µs/cycle | ${builds[1].label} CPU µs/cycle | time ÷ ${builds[1].label}, median (IQR) | CPU ÷ ${builds[1].label}, median (IQR) |`,
      '|---|---:|---:|---:|---:|---:|---:|',
    ];
    for (const mode of MODES) {
      const r = results.get(`ab\0${mode}`)!;
      ab.push(
        `| ${mode} | ${quantile(r.perSec, 0.5).toFixed(0)} | ${quantile(r.barePerSec, 0.5).toFixed(0)} | ${quantile(r.cpu, 0.5).toFixed(1)} | ` +
          `${quantile(r.bareCpu, 0.5).toFixed(1)} | ${range(r.ratios)} | ${range(r.cpuRatios)} |`,
      );
    }
    console.log(ab.join('\n'));
  }
}

/** One contender against its bare build (or its reference), in this process. */
async function child(job: Job): Promise<Result> {
  type Lib = { Holdfast: new (options: { redis: unknown; prefix: string }) => HoldfastLike };
  type Otel = { instrumentHoldfast: (o: unknown) => { disable(): void } };
  const otel = sdk();
  /** Turns the contender's subscriber on for `build` (the bridge of that build, or an empty one); returns its off. */
  const subscribe = async (build: Bundle): Promise<() => void> => {
    if (job.mode === 'no subscriber' || job.mode.startsWith('sdk')) return () => {};
    if (job.mode === 'empty subscriber') {
      const handlers = { asyncEnd: () => {} };
      const channels = [dc.tracingChannel('holdfast:acquire'), dc.tracingChannel('holdfast:release')];
      for (const c of channels) c.subscribe(handlers as never);
      return () => channels.forEach((c) => c.unsubscribe(handlers as never));
    }
    const { instrumentHoldfast } = (await import(build.otel)) as Otel;
    const instrumentation = instrumentHoldfast({ tracerProvider: otel.tracerProvider, meterProvider: otel.meterProvider, spans: job.mode === 'metrics+spans' });
    return () => instrumentation.disable();
  };
  const reference = (await import(job.reference ? job.reference.lib : job.build.bare)) as Lib;
  const lib = (await import(job.mode.startsWith('sdk') ? job.build.bare : job.build.lib)) as Lib;
  const clients = [new Redis(job.url), new Redis(job.url)];
  const hfBare = new reference.Holdfast({ redis: clients[0], prefix: 'bench-reference:' });
  const hf = new lib.Holdfast({ redis: clients[1], prefix: 'bench-contender:' });
  // Against the bare build the contender's subscriber stays on; against a reference each side's is on for its blocks.
  const off = job.reference ? undefined : await subscribe(job.build);
  const own = async <R>(build: Bundle | undefined, run: () => Promise<R>): Promise<R> => {
    if (!build) return run();
    const stop = await subscribe(build);
    try {
      return await run();
    } finally {
      stop();
    }
  };
  const cycleOf =
    (h: HoldfastLike): Cycle =>
    async () => {
      const held = await h.lock('l').acquire();
      await held.release();
    };
  const a = cycleOf(hfBare);
  const b = job.mode.startsWith('sdk') ? sdkCycle(hf, otel, job.mode === 'sdk: metrics+spans') : cycleOf(hf);
  const warm = (cycle: Cycle) => async (): Promise<void> => {
    for (let i = 0; i < 1000; i++) await cycle();
  };
  for (let i = 0; i < 2; i++) {
    await own(job.reference, warm(a));
    await own(job.reference && job.build, warm(b));
  }
  const result: Result = { ratios: [], cpuRatios: [], perSec: [], barePerSec: [], cpu: [], bareCpu: [] };
  const x = (): Promise<{ ms: number; cpuUs: number }> => own(job.reference, () => block(a));
  const y = (): Promise<{ ms: number; cpuUs: number }> => own(job.reference && job.build, () => block(b));
  for (let round = 0; round < job.rounds; round++) {
    let xs: { ms: number; cpuUs: number };
    let ys: { ms: number; cpuUs: number };
    if (round % 2 === 0) {
      xs = await x();
      ys = await y();
    } else {
      ys = await y();
      xs = await x();
    }
    result.ratios.push(ys.ms / xs.ms);
    result.cpuRatios.push(ys.cpuUs / xs.cpuUs);
    result.perSec.push((BLOCK / ys.ms) * 1000);
    result.barePerSec.push((BLOCK / xs.ms) * 1000);
    result.cpu.push(ys.cpuUs / BLOCK);
    result.bareCpu.push(xs.cpuUs / BLOCK);
  }
  off?.();
  await Promise.all([hfBare.close(), hf.close()]);
  for (const c of clients) c.disconnect();
  await otel.shutdown();
  return result;
}

/** The cycle of `h` (a bare build) feeding the SDK what the bridge would, straight (see the `sdk:` modes). */
function sdkCycle(h: HoldfastLike, otel: ReturnType<typeof sdk>, spans: boolean): Cycle {
  const meter = otel.meterProvider.getMeter('sdk-floor');
  const wait = meter.createHistogram('holdfast.acquire.duration', { unit: 's' });
  const hold = meter.createHistogram('holdfast.hold.duration', { unit: 's' });
  const tracer = otel.tracerProvider.getTracer('sdk-floor');
  const byOutcome = { 'holdfast.kind': 'lock', 'holdfast.acquire.outcome': 'acquired' };
  const byEnd = { 'holdfast.kind': 'lock', 'holdfast.hold.end': 'released' };
  let token = 0;
  return async () => {
    const t0 = performance.now();
    const held = await h.lock('l').acquire();
    const at = performance.now();
    wait.record((at - t0) / 1000, byOutcome);
    const span = spans
      ? tracer.startSpan('holdfast.hold', {
          startTime: at,
          attributes: {
            'holdfast.kind': 'lock',
            'holdfast.lock.name': 'l',
            'holdfast.acquire.attempts': 1,
            'holdfast.acquire.waited_ms': at - t0,
            'holdfast.owner.fingerprint': '0123456789ab',
            'holdfast.token': ++token,
            'holdfast.hold_count': 1,
          },
        })
      : undefined;
    await held.release();
    hold.record((performance.now() - at) / 1000, byEnd);
    if (span) {
      span.setAttribute('holdfast.hold.end', 'released');
      span.end();
    }
  };
}

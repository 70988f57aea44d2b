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
 * `--modes` picks the contenders (default `no subscriber,metrics,metrics+spans`; `empty subscriber` is the fourth).
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
    // internal: run one comparison in this (child) process
    child: { type: 'string' },
  },
});
const BLOCK = Number(values.block);
const ROUNDS = Number(values.rounds);
const CHUNKS = Number(values.chunks);

type Mode = 'no subscriber' | 'empty subscriber' | 'metrics' | 'metrics+spans';
const ALL_MODES: readonly Mode[] = ['no subscriber', 'empty subscriber', 'metrics', 'metrics+spans'];
const MODES = values.modes.split(',').map((m) => m.trim()) as Mode[];
for (const m of MODES) if (!ALL_MODES.includes(m)) throw new TypeError(`--modes: ${ALL_MODES.join(', ')}; got ${m}`);

/** What a child process runs: one contender against its bare build. */
interface Job {
  mode: Mode;
  build: Bundle;
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
    const jobs = builds.flatMap((b) => MODES.map((mode) => ({ key: `${b.label}\0${mode}`, mode, build: b.build })));
    for (let chunk = 0; chunk < CHUNKS; chunk++) {
      const rounds = Math.floor(ROUNDS / CHUNKS) + (chunk < ROUNDS % CHUNKS ? 1 : 0);
      for (const job of chunk % 2 === 0 ? jobs : [...jobs].reverse()) {
        const spec: Job = { mode: job.mode, build: job.build, url: server.url, rounds };
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
}

/** One contender against its bare build, in this process. */
async function child(job: Job): Promise<Result> {
  type Lib = { Holdfast: new (options: { redis: unknown; prefix: string }) => HoldfastLike };
  const bare = (await import(job.build.bare)) as Lib;
  const lib = (await import(job.build.lib)) as Lib;
  const otel = sdk();
  const clients = [new Redis(job.url), new Redis(job.url)];
  const hfBare = new bare.Holdfast({ redis: clients[0], prefix: 'bench-bare:' });
  const hf = new lib.Holdfast({ redis: clients[1], prefix: 'bench-contender:' });
  let instrumentation: { disable(): void } | undefined;
  if (job.mode === 'empty subscriber') {
    const handlers = { asyncEnd: () => {} };
    const channels = [dc.tracingChannel('holdfast:acquire'), dc.tracingChannel('holdfast:release')];
    for (const c of channels) c.subscribe(handlers as never);
    instrumentation = { disable: () => channels.forEach((c) => c.unsubscribe(handlers as never)) };
  } else if (job.mode !== 'no subscriber') {
    const { instrumentHoldfast } = (await import(job.build.otel)) as { instrumentHoldfast: (o: unknown) => { disable(): void } };
    instrumentation = instrumentHoldfast({ tracerProvider: otel.tracerProvider, meterProvider: otel.meterProvider, spans: job.mode === 'metrics+spans' });
  }
  const cycleOf =
    (h: HoldfastLike): Cycle =>
    async () => {
      const held = await h.lock('l').acquire();
      await held.release();
    };
  const a = cycleOf(hfBare);
  const b = cycleOf(hf);
  for (let i = 0; i < 1000; i++) {
    await a();
    await b();
  }
  const result: Result = { ratios: [], cpuRatios: [], perSec: [], barePerSec: [], cpu: [], bareCpu: [] };
  for (let round = 0; round < job.rounds; round++) {
    let x: { ms: number; cpuUs: number };
    let y: { ms: number; cpuUs: number };
    if (round % 2 === 0) {
      x = await block(a);
      y = await block(b);
    } else {
      y = await block(b);
      x = await block(a);
    }
    result.ratios.push(y.ms / x.ms);
    result.cpuRatios.push(y.cpuUs / x.cpuUs);
    result.perSec.push((BLOCK / y.ms) * 1000);
    result.barePerSec.push((BLOCK / x.ms) * 1000);
    result.cpu.push(y.cpuUs / BLOCK);
    result.bareCpu.push(x.cpuUs / BLOCK);
  }
  instrumentation?.disable();
  await Promise.all([hfBare.close(), hf.close()]);
  for (const c of clients) c.disconnect();
  await otel.shutdown();
  return result;
}

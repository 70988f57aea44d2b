/**
 * What the diagnostics channels cost on the hot path: the uncontended Lock cycle (acquire + release) of
 *
 * - **base**: the library as it was before the channels (`--base <rev>`, default the merge-base of HEAD and `main`),
 *   built from that revision's `src/`;
 * - **channels**: this work tree's `src/`, nobody subscribed;
 * - **otel**: the same, with `holdfast/otel` on (the OpenTelemetry SDK's tracer provider with a batch span processor
 *   and a meter provider with a reader; the exports are dropped, the spans and aggregations are made);
 * - **otel-metrics**: the same, with `holdfast/otel` recording metrics only (`spans: false`).
 *
 * Both libraries are bundled with the same esbuild settings. Each comparison (base vs channels, base vs otel) runs in a
 * child process of its own, each library over its own ioredis connection to one redis-server this script starts: the
 * channels are global to a process, and subscribing and unsubscribing between blocks would itself cost (Node swaps a
 * channel's prototype on the first subscriber and the last). A shared 2-core machine drifts by tens of percent within
 * seconds, so within a process the two run in short interleaved blocks (ABBA) and the ratio to base is taken per pair;
 * the table gives the median over pairs, its interquartile range, and the median client CPU per cycle.
 *
 *   npx tsx bench/diagnostics.ts [--base <rev>] [--block 200] [--rounds 60]
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { build } from 'esbuild';
import { Redis } from 'ioredis';
import { MeterProvider, PeriodicExportingMetricReader, InMemoryMetricExporter, AggregationTemporality } from '@opentelemetry/sdk-metrics';
import { BasicTracerProvider, BatchSpanProcessor, type SpanExporter } from '@opentelemetry/sdk-trace-base';
import { RedisServer } from '../test/support/redis-server.js';

const { values } = parseArgs({
  options: {
    base: { type: 'string' },
    block: { type: 'string', default: '200' },
    rounds: { type: 'string', default: '60' },
    // internal: run one comparison in this (child) process, with the libraries bundled at these paths
    pair: { type: 'string' },
    libs: { type: 'string' },
  },
});
const BLOCK = Number(values.block);
const ROUNDS = Number(values.rounds);
const ROOT = join(import.meta.dirname, '..');

interface HoldfastLike {
  lock(name: string): { acquire(): Promise<{ release(): Promise<void> }> };
  close(): Promise<void>;
}
interface Lib {
  Holdfast: new (options: { redis: unknown; prefix: string }) => HoldfastLike;
}

/** Bundles `<dir>/src/index.ts` (and `src/otel/index.ts` when asked) into `<out>`; returns the module paths. */
async function bundle(dir: string, out: string, otel: boolean): Promise<string[]> {
  const entries = [join(dir, 'src/index.ts'), ...(otel ? [join(dir, 'src/otel/index.ts')] : [])];
  await build({ entryPoints: entries, outdir: out, bundle: true, platform: 'node', format: 'esm', target: 'node20', packages: 'external', outbase: join(dir, 'src'), logLevel: 'error' });
  return [join(out, 'index.js'), ...(otel ? [join(out, 'otel/index.js')] : [])];
}

type Cycle = () => Promise<void>;
interface Block {
  ms: number;
  cpuUs: number;
}
async function block(cycle: Cycle): Promise<Block> {
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

interface Result {
  pair: string;
  ratios: number[];
  cpuRatios: number[];
  perSec: number[];
  basePerSec: number[];
  cpu: number[];
  baseCpu: number[];
}

if (values.pair === undefined) {
  const baseRef = values.base ?? execFileSync('git', ['-C', ROOT, 'merge-base', 'HEAD', 'main']).toString().trim();
  const work = mkdtempSync(join(tmpdir(), 'holdfast-bench-'));
  const baseSrc = join(work, 'base');
  execFileSync('sh', ['-c', `mkdir -p ${baseSrc} && git -C ${ROOT} archive ${baseRef} src | tar -x -C ${baseSrc}`]);
  const baseRev = execFileSync('git', ['-C', ROOT, 'rev-parse', '--short', baseRef]).toString().trim();
  // the bundles import their dependencies (none at run time but @opentelemetry/api) from here
  symlinkSync(join(ROOT, 'node_modules'), join(work, 'node_modules'));
  const [basePath] = await bundle(baseSrc, join(work, 'base-dist'), false);
  const [currentPath, otelPath] = await bundle(ROOT, join(work, 'current-dist'), true);
  const server = await RedisServer.start();
  const results: Result[] = [];
  try {
    for (const pair of ['channels', 'otel-metrics', 'otel']) {
      const out = execFileSync(
        process.execPath,
        ['--import', 'tsx', join(ROOT, 'bench/diagnostics.ts'), '--pair', pair, '--libs', JSON.stringify([basePath, currentPath, otelPath, server.url]), '--block', String(BLOCK), '--rounds', String(ROUNDS)],
        { stdio: ['ignore', 'pipe', 'inherit'] },
      );
      results.push(JSON.parse(out.toString()) as Result);
    }
  } finally {
    await server.stop();
    rmSync(work, { recursive: true, force: true });
  }
  const rows = ['| contender | cycles/s (median) | client CPU µs/cycle (median) | time ÷ base, median of pairs (IQR) | CPU ÷ base (median) |', '|---|---:|---:|---:|---:|'];
  for (const r of results) {
    rows.push(`| base (${r.pair} run) | ${quantile(r.basePerSec, 0.5).toFixed(0)} | ${quantile(r.baseCpu, 0.5).toFixed(1)} | 1 | 1 |`);
    rows.push(
      `| ${r.pair} | ${quantile(r.perSec, 0.5).toFixed(0)} | ${quantile(r.cpu, 0.5).toFixed(1)} | **${quantile(r.ratios, 0.5).toFixed(3)}** (${quantile(r.ratios, 0.25).toFixed(3)}–${quantile(r.ratios, 0.75).toFixed(3)}) | ${quantile(r.cpuRatios, 0.5).toFixed(3)} |`,
    );
  }
  console.log(`Uncontended Lock acquire+release (ioredis), ${ROUNDS} pairs of ${BLOCK}-cycle blocks per comparison, base = ${baseRev}, Node ${process.version}\n`);
  console.log(rows.join('\n'));
} else {
  await child(values.pair, JSON.parse(values.libs ?? '[]') as string[]);
}

/** One comparison, base vs `pair`, in this process; prints its {@link Result} as JSON. */
async function child(pair: string, [basePath, currentPath, otelPath, url]: string[]): Promise<void> {
  const base = (await import(basePath!)) as Lib;
  const current = (await import(currentPath!)) as Lib;
  /** Drops every span (the batch processor still queues and hands them over). */
  const dropSpans: SpanExporter = { export: (_spans, done) => done({ code: 0 }), shutdown: async () => {} };
  const tracerProvider = new BasicTracerProvider({ spanProcessors: [new BatchSpanProcessor(dropSpans)] });
  const meterProvider = new MeterProvider({
    readers: [new PeriodicExportingMetricReader({ exporter: new InMemoryMetricExporter(AggregationTemporality.DELTA), exportIntervalMillis: 1000 })],
  });
  const clients = [new Redis(url!), new Redis(url!)];
  const hfBase = new base.Holdfast({ redis: clients[0], prefix: 'bench-base:' });
  const hfCur = new current.Holdfast({ redis: clients[1], prefix: `bench-${pair}:` });
  let instrumentation: { disable(): void } | undefined;
  if (pair !== 'channels') {
    const otel = (await import(otelPath!)) as { instrumentHoldfast(o: unknown): { disable(): void } };
    instrumentation = otel.instrumentHoldfast({ tracerProvider, meterProvider, spans: pair === 'otel' });
  }
  const cycleOf =
    (hf: HoldfastLike): Cycle =>
    async () => {
      const held = await hf.lock('l').acquire();
      await held.release();
    };
  const a = cycleOf(hfBase);
  const b = cycleOf(hfCur);
  for (let i = 0; i < 1000; i++) {
    await a();
    await b();
  }
  const result: Result = { pair, ratios: [], cpuRatios: [], perSec: [], basePerSec: [], cpu: [], baseCpu: [] };
  for (let round = 0; round < ROUNDS; round++) {
    let x: Block;
    let y: Block;
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
    result.basePerSec.push((BLOCK / x.ms) * 1000);
    result.cpu.push(y.cpuUs / BLOCK);
    result.baseCpu.push(x.cpuUs / BLOCK);
  }
  instrumentation?.disable();
  await Promise.all([hfBase.close(), hfCur.close()]);
  for (const c of clients) c.disconnect();
  await tracerProvider.shutdown();
  await meterProvider.shutdown();
  process.stdout.write(JSON.stringify(result));
}

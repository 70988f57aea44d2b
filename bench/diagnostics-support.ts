/**
 * What bench/diagnostics.ts and bench/profile-otel.ts share: bundling a revision's `src/` (with or without the
 * diagnostics channels), and the OpenTelemetry SDK set up the way a service runs it.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, symlinkSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { build, type Plugin } from 'esbuild';
import { AggregationTemporality, InMemoryMetricExporter, MeterProvider, PeriodicExportingMetricReader } from '@opentelemetry/sdk-metrics';
import { BasicTracerProvider, BatchSpanProcessor, SimpleSpanProcessor, type SpanExporter } from '@opentelemetry/sdk-trace-base';

export const ROOT = join(import.meta.dirname, '..');

/** The hooks of src/internal/trace.ts, passed straight through: the library as if the channels were not there. */
const PASS_THROUGH = `
export * from './trace.js';
export function traceAcquire(_kind, _name, _options, run) { return run(undefined); }
export function traceRelease(_held, run) { return run(); }
export function publishLost() {}
export function traceRenew(_kind, _name, _owner, _token, _leaseMs, _source, renew) { return renew(); }
export function publishHandoff() {}
`;

/**
 * Replaces `src/internal/trace.ts` by {@link PASS_THROUGH} for every module but the stub itself (whose
 * `export *` brings the rest, e.g. `kindOf`, from the real file; local exports win over `export *`). A hook the stub
 * does not cover would be the real one: the bundle then says so (every hook is listed here).
 */
function withoutChannels(srcDir: string): Plugin {
  const trace = resolve(srcDir, 'internal/trace.ts');
  return {
    name: 'without-channels',
    setup(b) {
      b.onResolve({ filter: /\/trace\.js$/ }, (args) => {
        const target = resolve(args.resolveDir, args.path).replace(/\.js$/, '.ts');
        if (target !== trace) return undefined;
        return args.namespace === 'pass-through' ? { path: trace } : { path: trace, namespace: 'pass-through' };
      });
      b.onLoad({ filter: /.*/, namespace: 'pass-through' }, () => ({ contents: PASS_THROUGH, loader: 'js', resolveDir: dirname(trace) }));
    },
  };
}

/** The modules of one bundled build. */
export interface Bundle {
  /** The library (`src/index.ts`). */
  lib: string;
  /** `holdfast/otel` (`src/otel/index.ts`). */
  otel: string;
  /** The library with the channel hooks passed straight through (see {@link PASS_THROUGH}). */
  bare: string;
}

/**
 * Bundles `<dir>/src` into `<out>` three ways (see {@link Bundle}), with the same esbuild settings, ESM, dependencies
 * left as imports (resolved from `<out>/../node_modules`, linked to this checkout's), a source map beside each file.
 */
export async function bundle(dir: string, out: string): Promise<Bundle> {
  const src = join(dir, 'src');
  const common = { bundle: true, platform: 'node', format: 'esm', target: 'node20', packages: 'external', sourcemap: true, logLevel: 'error' } as const;
  const parent = dirname(out);
  mkdirSync(parent, { recursive: true });
  if (!existsSync(join(parent, 'node_modules'))) symlinkSync(join(ROOT, 'node_modules'), join(parent, 'node_modules'));
  await build({ ...common, entryPoints: [join(src, 'index.ts'), join(src, 'otel/index.ts')], outdir: join(out, 'with'), outbase: src });
  await build({ ...common, entryPoints: [join(src, 'index.ts')], outdir: join(out, 'bare'), outbase: src, plugins: [withoutChannels(src)] });
  return { lib: join(out, 'with/index.js'), otel: join(out, 'with/otel/index.js'), bare: join(out, 'bare/index.js') };
}

/** Extracts `rev`'s `src/` into `<dir>/src` (the checkout's own `src/` when `rev` is undefined: returns {@link ROOT}). */
export function checkout(rev: string | undefined, dir: string): string {
  if (rev === undefined) return ROOT;
  mkdirSync(dir, { recursive: true });
  execFileSync('sh', ['-c', `git -C '${ROOT}' archive '${rev}' src | tar -x -C '${dir}'`]);
  return dir;
}

/**
 * The OpenTelemetry SDK as a service runs it: a tracer provider with a `BatchSpanProcessor` (what production uses: a
 * span's end only queues it, the export runs later off the hot path) and a meter provider with a periodic reader
 * (1 s, delta). The exporters drop what they get: the spans and the aggregations are made, nothing is sent.
 * `simple`: a `SimpleSpanProcessor` instead (each span handed to the exporter as it ends, as tests do), to compare.
 */
export function sdk(processor: 'batch' | 'simple' = 'batch'): { tracerProvider: BasicTracerProvider; meterProvider: MeterProvider; shutdown(): Promise<void> } {
  const dropSpans: SpanExporter = { export: (_spans, done) => done({ code: 0 }), shutdown: async () => {} };
  const spanProcessor = processor === 'batch' ? new BatchSpanProcessor(dropSpans) : new SimpleSpanProcessor(dropSpans);
  const tracerProvider = new BasicTracerProvider({ spanProcessors: [spanProcessor] });
  const meterProvider = new MeterProvider({
    readers: [new PeriodicExportingMetricReader({ exporter: new InMemoryMetricExporter(AggregationTemporality.DELTA), exportIntervalMillis: 1000 })],
  });
  return {
    tracerProvider,
    meterProvider,
    shutdown: async () => {
      await tracerProvider.shutdown();
      await meterProvider.shutdown();
    },
  };
}

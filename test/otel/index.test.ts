/**
 * holdfast/otel with the real OpenTelemetry SDK and its in-memory exporters: spans for waiting and holding,
 * metrics of wait and hold time, acquisitions by outcome, holds lost by reason, holds held now.
 */
import assert from 'node:assert/strict';
import { after, before, beforeEach, it } from 'node:test';
import { AggregationTemporality, InMemoryMetricExporter, MeterProvider, PeriodicExportingMetricReader, type DataPoint, type Histogram } from '@opentelemetry/sdk-metrics';
import { BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor, type ReadableSpan } from '@opentelemetry/sdk-trace-base';
import { context, SpanStatusCode, trace } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { fingerprint } from '../../src/index.js';
import { ATTR, instrumentHoldfast, METRICS, SPANS, type HoldfastInstrumentation } from '../../src/otel/index.js';
import { describeEachAdapter, sleep } from '../support/suite.js';

describeEachAdapter('holdfast/otel (OpenTelemetry SDK, in-memory exporters)', (ctx) => {
  let spans: InMemorySpanExporter;
  let tracerProvider: BasicTracerProvider;
  let metricExporter: InMemoryMetricExporter;
  let reader: PeriodicExportingMetricReader;
  let meterProvider: MeterProvider;
  let instrumentation: HoldfastInstrumentation;

  before(() => {
    spans = new InMemorySpanExporter();
    tracerProvider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(spans)] });
    metricExporter = new InMemoryMetricExporter(AggregationTemporality.CUMULATIVE);
    reader = new PeriodicExportingMetricReader({ exporter: metricExporter, exportIntervalMillis: 3_600_000 });
    meterProvider = new MeterProvider({ readers: [reader] });
    instrumentation = instrumentHoldfast({ tracerProvider, meterProvider, nameInMetrics: true });
  });
  after(async () => {
    instrumentation.disable();
    await tracerProvider.shutdown();
    await meterProvider.shutdown();
  });
  beforeEach(() => spans.reset());

  /** The data points of metric `name` for lock `lock`, as of now. */
  async function points(name: string, lock: string): Promise<DataPoint<unknown>[]> {
    metricExporter.reset();
    await reader.forceFlush();
    const all = metricExporter.getMetrics().flatMap((rm) => rm.scopeMetrics.flatMap((sm) => sm.metrics));
    const metric = all.find((m) => m.descriptor.name === name);
    return (metric?.dataPoints ?? []).filter((p) => p.attributes[ATTR.NAME] === lock);
  }
  const sumOf = (ps: DataPoint<unknown>[], attr: string, value: string): number =>
    ps.filter((p) => p.attributes[attr] === value).reduce((n, p) => n + (p.value as number), 0);
  const spansNamed = (name: string, lock: string): ReadableSpan[] => spans.getFinishedSpans().filter((s) => s.name === name && s.attributes[ATTR.NAME] === lock);

  void it("a labelled client's hold span carries its label; an unlabelled one's carries none", async () => {
    const { holdfast: labelled } = await ctx.open({ label: 'otel-host:7' });
    await (await labelled.lock('otel:label').acquire()).release();
    await (await ctx.holdfast.lock('otel:nolabel').acquire()).release();
    assert.equal(spansNamed(SPANS.HOLD, 'otel:label')[0]?.attributes[ATTR.LABEL], 'otel-host:7');
    assert.equal(spansNamed(SPANS.HOLD, 'otel:nolabel')[0]?.attributes[ATTR.LABEL], undefined);
  });

  void it('an uncontended acquire and its release: a hold span (no wait span), wait and hold histograms, acquisitions, held now', async () => {
    const held = await ctx.holdfast.lock('otel:a').acquire();
    assert.equal(sumOf(await points(METRICS.HELD, 'otel:a'), ATTR.KIND, 'lock'), 1, 'held now while held');
    await sleep(120);
    await held.release();

    assert.deepEqual(spansNamed(SPANS.WAIT, 'otel:a'), [], 'the first attempt got it: nothing was waited for');
    const [hold] = spansNamed(SPANS.HOLD, 'otel:a');
    assert.ok(hold, 'a hold span');
    assert.equal(hold.attributes[ATTR.KIND], 'lock');
    assert.equal(hold.attributes[ATTR.ATTEMPTS], 1);
    assert.equal(typeof hold.attributes[ATTR.WAITED], 'number');
    assert.equal(hold.attributes[ATTR.TOKEN], held.token);
    assert.equal(hold.attributes[ATTR.HOLD_COUNT], 1);
    assert.equal(hold.attributes[ATTR.FINGERPRINT], fingerprint(held.owner));
    assert.equal(hold.attributes[ATTR.HOLD_END], 'released');
    assert.equal(hold.status.code, SpanStatusCode.UNSET);
    const holdMs = hold.duration[0] * 1000 + hold.duration[1] / 1e6;
    assert.ok(holdMs >= 110, `the hold span lasts the hold: ${holdMs} ms`);

    assert.equal(sumOf(await points(METRICS.ACQUISITIONS, 'otel:a'), ATTR.OUTCOME, 'acquired'), 1);
    assert.equal(sumOf(await points(METRICS.HELD, 'otel:a'), ATTR.KIND, 'lock'), 0, 'held now after the release');
    const [waitHist] = await points(METRICS.WAIT, 'otel:a');
    assert.equal((waitHist?.value as Histogram).count, 1);
    const [holdHist] = await points(METRICS.HOLD, 'otel:a');
    assert.equal((holdHist?.value as Histogram).count, 1);
    const holdSum = (holdHist?.value as Histogram).sum ?? 0;
    assert.ok(holdSum >= 0.11, `hold time in seconds: ${holdSum}`);
    assert.equal(holdHist?.attributes[ATTR.HOLD_END], 'released');

    const everything = JSON.stringify(spans.getFinishedSpans().map((s) => s.attributes));
    assert.ok(!everything.includes(held.owner), 'no owner id on a span');
  });

  void it('acquisitions by outcome: timed out and aborted', async () => {
    const lock = ctx.holdfast.lock('otel:b');
    await using _held = await lock.acquire();
    assert.equal(await lock.tryAcquire(), null);
    await assert.rejects(lock.acquire({ timeout: 50 }));
    await assert.rejects(lock.acquire({ signal: AbortSignal.timeout(50) }));
    const ps = await points(METRICS.ACQUISITIONS, 'otel:b');
    assert.equal(sumOf(ps, ATTR.OUTCOME, 'acquired'), 1);
    assert.equal(sumOf(ps, ATTR.OUTCOME, 'timed-out'), 2);
    assert.equal(sumOf(ps, ATTR.OUTCOME, 'aborted'), 1);
    assert.deepEqual(spansNamed(SPANS.WAIT, 'otel:b').map((s) => s.attributes[ATTR.OUTCOME]).sort(), ['aborted', 'timed-out', 'timed-out']);
    const timedOut = spansNamed(SPANS.WAIT, 'otel:b').find((s) => s.attributes[ATTR.OUTCOME] === 'timed-out' && (s.attributes[ATTR.ATTEMPTS] as number) > 1);
    assert.ok(timedOut, 'the 50 ms wait made more than one attempt');
    const waitedMs = timedOut.duration[0] * 1000 + timedOut.duration[1] / 1e6;
    assert.ok(waitedMs >= 45, `the wait span covers the wait: ${waitedMs} ms`);
  });

  void it('a contended acquisition that gets the lock has a wait span; spans are children of the caller\'s span', async () => {
    const manager = new AsyncLocalStorageContextManager().enable();
    context.setGlobalContextManager(manager);
    try {
      const lock = ctx.holdfast.lock('otel:p');
      const first = await lock.acquire();
      const parent = tracerProvider.getTracer('test').startSpan('request');
      const second = context.with(trace.setSpan(context.active(), parent), () => lock.acquire({ timeout: 5000 }));
      await sleep(80);
      await first.release();
      await (await second).release();
      parent.end();
      const [wait] = spansNamed(SPANS.WAIT, 'otel:p');
      assert.ok(wait, 'a wait span');
      assert.equal(wait.attributes[ATTR.OUTCOME], 'acquired');
      assert.ok((wait.attributes[ATTR.ATTEMPTS] as number) >= 2);
      const holds = spansNamed(SPANS.HOLD, 'otel:p');
      assert.equal(holds.length, 2);
      const parentId = parent.spanContext().spanId;
      assert.equal(wait.parentSpanContext?.spanId, parentId, 'the wait span is a child of the caller\'s span');
      assert.deepEqual(holds.map((h) => h.parentSpanContext?.spanId === parentId).sort(), [false, true], 'the second hold span is a child of it');
    } finally {
      context.disable();
      manager.disable();
    }
  });

  void it('waitSpans: "all" records a wait span for an uncontended acquisition too', async () => {
    instrumentation.disable();
    instrumentation = instrumentHoldfast({ tracerProvider, meterProvider, nameInMetrics: true, waitSpans: 'all' });
    try {
      await (await ctx.holdfast.lock('otel:w').acquire()).release();
      const [wait] = spansNamed(SPANS.WAIT, 'otel:w');
      assert.equal(wait?.attributes[ATTR.OUTCOME], 'acquired');
      assert.equal(wait.attributes[ATTR.ATTEMPTS], 1);
    } finally {
      instrumentation.disable();
      instrumentation = instrumentHoldfast({ tracerProvider, meterProvider, nameInMetrics: true });
    }
  });

  void it('a lost hold: counted by reason, its hold span ends in error, held now goes back to 0', async () => {
    const held = await ctx.holdfast.lock('otel:c').acquire({ lease: 150 });
    await sleep(350);
    assert.ok(held.lost);
    assert.equal(sumOf(await points(METRICS.LOST, 'otel:c'), ATTR.LOST_REASON, 'expired'), 1);
    assert.equal(sumOf(await points(METRICS.HELD, 'otel:c'), ATTR.KIND, 'lock'), 0);
    const [hold] = spansNamed(SPANS.HOLD, 'otel:c');
    assert.ok(hold);
    assert.equal(hold.status.code, SpanStatusCode.ERROR);
    assert.equal(hold.attributes[ATTR.HOLD_END], 'lost');
    assert.equal(hold.attributes[ATTR.LOST_REASON], 'expired');
    await assert.rejects(held.release());
    assert.equal(sumOf(await points(METRICS.HELD, 'otel:c'), ATTR.KIND, 'lock'), 0, 'a release after the loss is not counted twice');
  });

  void it('without nameInMetrics: acquisitions counted by kind and outcome only, held now by kind; disable() stops the counts', async () => {
    const exporter = new InMemoryMetricExporter(AggregationTemporality.CUMULATIVE);
    const ownReader = new PeriodicExportingMetricReader({ exporter, exportIntervalMillis: 3_600_000 });
    const provider = new MeterProvider({ readers: [ownReader] });
    const own = instrumentHoldfast({ meterProvider: provider, spans: false });
    const read = async (name: string): Promise<DataPoint<unknown>[]> => {
      exporter.reset();
      await ownReader.forceFlush();
      const all = exporter.getMetrics().flatMap((rm) => rm.scopeMetrics.flatMap((sm) => sm.metrics));
      return all.find((m) => m.descriptor.name === name)?.dataPoints ?? [];
    };
    try {
      const lock = ctx.holdfast.lock('otel:f');
      await (await lock.acquire()).release();
      const held = await lock.acquire();
      assert.equal(await lock.tryAcquire(), null);
      const heldNow = await read(METRICS.HELD);
      assert.deepEqual(
        heldNow.map((p) => [p.attributes, p.value]),
        [[{ [ATTR.KIND]: 'lock' }, 1]],
      );
      await held.release();
      const counted = await read(METRICS.ACQUISITIONS);
      assert.deepEqual(
        counted.map((p) => [p.attributes, p.value]).sort((a, b) => String(b[1]).localeCompare(String(a[1]))),
        [
          [{ [ATTR.KIND]: 'lock', [ATTR.OUTCOME]: 'acquired' }, 2],
          [{ [ATTR.KIND]: 'lock', [ATTR.OUTCOME]: 'timed-out' }, 1],
        ],
        'no lock name on the data points',
      );
      assert.equal(sumOf(await read(METRICS.HELD), ATTR.KIND, 'lock'), 0);
      const [wait] = await read(METRICS.WAIT);
      assert.equal(wait?.attributes[ATTR.NAME], undefined);
      own.disable();
      await (await lock.acquire()).release();
      assert.ok(
        (await read(METRICS.ACQUISITIONS)).every((p) => p.attributes[ATTR.OUTCOME] !== 'acquired' || p.value === 2),
        'nothing counted after disable()',
      );
    } finally {
      own.disable();
      await provider.shutdown();
    }
  });

  void it('a loss ends every acquisition of the hold: two reentrant acquisitions, two hold spans ended as lost', async () => {
    const lock = ctx.holdfast.lock('otel:g');
    const one = await lock.acquire({ owner: 'otel-g-owner', lease: 150 });
    const two = await lock.acquire({ owner: 'otel-g-owner', lease: 150 });
    assert.equal(two.holdCount, 2);
    assert.equal(sumOf(await points(METRICS.HELD, 'otel:g'), ATTR.KIND, 'lock'), 2);
    await sleep(350);
    assert.ok(one.lost && two.lost);
    const holds = spansNamed(SPANS.HOLD, 'otel:g');
    assert.deepEqual(
      holds.map((h) => [h.attributes[ATTR.HOLD_COUNT], h.attributes[ATTR.HOLD_END], h.attributes[ATTR.LOST_REASON]]).sort(),
      [
        [1, 'lost', 'expired'],
        [2, 'lost', 'expired'],
      ],
    );
    assert.equal(sumOf(await points(METRICS.HELD, 'otel:g'), ATTR.KIND, 'lock'), 0);
    await assert.rejects(one.release());
    await assert.rejects(two.release());
  });

  void it('every primitive kind is recorded (fair lock, read-write lock, semaphores, multi-lock)', async () => {
    const h = ctx.holdfast;
    await (await h.fairLock('otel:d').acquire()).release();
    await (await h.readWriteLock('otel:d').readLock().acquire()).release();
    await (await h.readWriteLock('otel:d').writeLock().acquire()).release();
    await h.semaphore('otel:d').trySetPermits(1);
    await (await h.semaphore('otel:d').acquire()).release();
    await h.permitExpirableSemaphore('otel:d').trySetPermits(1);
    await (await h.permitExpirableSemaphore('otel:d').acquire()).release();
    const ps = await points(METRICS.ACQUISITIONS, 'otel:d');
    for (const kind of ['fair-lock', 'read-lock', 'write-lock', 'semaphore', 'permit-semaphore']) assert.equal(sumOf(ps, ATTR.KIND, kind), 1, kind);
    assert.deepEqual(
      spansNamed(SPANS.HOLD, 'otel:d').map((s) => s.attributes[ATTR.KIND]).sort(),
      ['fair-lock', 'permit-semaphore', 'read-lock', 'semaphore', 'write-lock'],
    );
  });

  void it('disable() stops recording', async () => {
    const other = instrumentHoldfast({ tracerProvider, meterProvider, metrics: false });
    other.disable();
    other.disable();
    spans.reset();
    instrumentation.disable();
    try {
      await (await ctx.holdfast.lock('otel:e').acquire()).release();
      assert.equal(spans.getFinishedSpans().length, 0);
    } finally {
      instrumentation = instrumentHoldfast({ tracerProvider, meterProvider, nameInMetrics: true });
    }
  });
});

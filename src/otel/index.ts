/**
 * `holdfast/otel`: OpenTelemetry metrics and spans for holdfast, from its diagnostics channels (see
 * `holdfast`'s `CHANNELS`). It subscribes to the channels by name, so it sees every holdfast copy loaded in the
 * process (ESM and CJS alike), and holdfast itself never depends on OpenTelemetry.
 *
 * @example
 * ```ts
 * import { instrumentHoldfast } from 'holdfast/otel';
 * // after the OpenTelemetry SDK registered its global providers:
 * const instrumentation = instrumentHoldfast();
 * // … on shutdown
 * instrumentation.disable();
 * ```
 *
 * @module
 */
import dc from 'node:diagnostics_channel';
import {
  context as otelContext,
  metrics,
  SpanStatusCode,
  trace,
  type Attributes,
  type Context,
  type MeterProvider,
  type Span,
  type TracerProvider,
} from '@opentelemetry/api';
import { CHANNELS, type AcquireContext, type HandoffMessage, type LostMessage, type ReleaseContext, type RenewMessage } from '../diagnostics.js';

/** The attribute names holdfast puts on its spans and metrics. */
export const ATTR = {
  /** Which primitive: `lock`, `fair-lock`, `read-lock`, `write-lock`, `semaphore`, `permit-semaphore`, `multi-lock`, `redlock`. */
  KIND: 'holdfast.kind',
  /** The lock's name (on spans; on metrics only with `nameInMetrics`). */
  NAME: 'holdfast.lock.name',
  /** The holder's fingerprint (a hash of the owner id, never the id). */
  FINGERPRINT: 'holdfast.owner.fingerprint',
  /** How the acquisition ended: `acquired`, `timed-out`, `aborted`, `error`. */
  OUTCOME: 'holdfast.acquire.outcome',
  /** Attempts made against Redis. */
  ATTEMPTS: 'holdfast.acquire.attempts',
  /** The fencing token of the hold. */
  TOKEN: 'holdfast.token',
  /** The owner's hold count after the acquisition. */
  HOLD_COUNT: 'holdfast.hold_count',
  /** Permits taken (semaphores). */
  PERMITS: 'holdfast.permits',
  /** How the hold ended: `released`, `not-held`, `failed`, `error`, or `lost`. */
  HOLD_END: 'holdfast.hold.end',
  /** Why a hold was lost: `expired`, `renewal-failed`, `taken-over`, `connection`, `release-failed`, `client-closed`. */
  LOST_REASON: 'holdfast.lost.reason',
  /** A renewal's result: `renewed`, `not-held`, `error`. */
  RENEW_RESULT: 'holdfast.renew.result',
} as const;

/** The metric names holdfast records. */
export const METRICS = {
  /** Histogram, seconds: how long acquisitions waited, by kind and outcome. */
  WAIT: 'holdfast.acquire.duration',
  /** Histogram, seconds: how long holds were held, by kind and how they ended. */
  HOLD: 'holdfast.hold.duration',
  /** Counter: acquisitions, by kind and outcome. */
  ACQUISITIONS: 'holdfast.acquisitions',
  /** Counter: holds lost, by kind and reason. */
  LOST: 'holdfast.lost',
  /** UpDownCounter: holds held now in this process, by kind. */
  HELD: 'holdfast.held',
  /** Counter: lease renewals, by kind and result. */
  RENEWALS: 'holdfast.renewals',
} as const;

/** The span names holdfast records. */
export const SPANS = {
  /** From the `acquire()` call to its end: the waiting. */
  WAIT: 'holdfast.acquire',
  /** From the acquisition to its release or loss: the holding. */
  HOLD: 'holdfast.hold',
} as const;

/** Options of {@link instrumentHoldfast}. */
export interface HoldfastOtelOptions {
  /**
   * Where the metrics go.
   * @default the global meter provider (`metrics.getMeterProvider()`)
   */
  meterProvider?: MeterProvider;
  /**
   * Where the spans go.
   * @default the global tracer provider (`trace.getTracerProvider()`)
   */
  tracerProvider?: TracerProvider;
  /**
   * Record spans for waiting and holding.
   * @default true
   */
  spans?: boolean;
  /**
   * Record metrics.
   * @default true
   */
  metrics?: boolean;
  /**
   * Put the lock name on metrics too (`holdfast.lock.name`). Every name becomes its own time series: leave it off
   * when names carry ids (`orders:42`). Spans always carry the name.
   * @default false
   */
  nameInMetrics?: boolean;
}

/** A running instrumentation: `disable()` (or `using`) unsubscribes it. */
export interface HoldfastInstrumentation extends Disposable {
  /** Stops recording. Idempotent. */
  disable(): void;
}

const SCOPE = 'holdfast';

/** One acquisition held now. */
interface Live {
  readonly key: string;
  readonly kind: string;
  readonly at: number;
  readonly attrs: Attributes;
  readonly span: Span | undefined;
}

/**
 * Subscribes to holdfast's diagnostics channels and records OpenTelemetry metrics ({@link METRICS}) and spans
 * ({@link SPANS}) with the attributes of {@link ATTR}. Call it once, after the SDK is set up.
 */
export function instrumentHoldfast(options: HoldfastOtelOptions = {}): HoldfastInstrumentation {
  const withSpans = options.spans ?? true;
  const withMetrics = options.metrics ?? true;
  const nameInMetrics = options.nameInMetrics ?? false;
  const tracer = withSpans ? (options.tracerProvider ?? trace.getTracerProvider()).getTracer(SCOPE) : undefined;
  const meter = withMetrics ? (options.meterProvider ?? metrics.getMeterProvider()).getMeter(SCOPE) : undefined;
  const waitHistogram = meter?.createHistogram(METRICS.WAIT, { unit: 's', description: 'How long holdfast acquisitions waited' });
  const holdHistogram = meter?.createHistogram(METRICS.HOLD, { unit: 's', description: 'How long holdfast holds were held' });
  const acquisitions = meter?.createCounter(METRICS.ACQUISITIONS, { description: 'holdfast acquisitions, by outcome' });
  const lostCounter = meter?.createCounter(METRICS.LOST, { description: 'holdfast holds lost, by reason' });
  const heldNow = meter?.createUpDownCounter(METRICS.HELD, { description: 'holdfast holds held now in this process' });
  const renewals = meter?.createCounter(METRICS.RENEWALS, { description: 'holdfast lease renewals, by result' });

  /** The wait span of an acquisition in progress, and the context its hold span will be a child of. */
  const waiting = new WeakMap<AcquireContext, { span: Span | undefined; parent: Context }>();
  const live = new Map<number, Live>();
  /** kind + name + fingerprint → the acquisitions of that hold (a loss ends them all). */
  const byHold = new Map<string, Set<number>>();
  const holdKey = (kind: string, name: string, fp: string | undefined): string => `${kind}\0${name}\0${fp ?? ''}`;
  const metricAttrs = (kind: string, name: string, extra: Attributes): Attributes =>
    nameInMetrics ? { [ATTR.KIND]: kind, [ATTR.NAME]: name, ...extra } : { [ATTR.KIND]: kind, ...extra };

  const end = (id: number, how: string, error?: { reason: string; message: string }): void => {
    const hold = live.get(id);
    if (!hold) return;
    live.delete(id);
    const ids = byHold.get(hold.key);
    ids?.delete(id);
    if (ids?.size === 0) byHold.delete(hold.key);
    holdHistogram?.record((performance.now() - hold.at) / 1000, { ...hold.attrs, [ATTR.HOLD_END]: how });
    heldNow?.add(-1, hold.attrs);
    if (hold.span) {
      hold.span.setAttribute(ATTR.HOLD_END, how);
      if (error) {
        hold.span.setAttribute(ATTR.LOST_REASON, error.reason);
        hold.span.setStatus({ code: SpanStatusCode.ERROR, message: error.message });
      }
      hold.span.end();
    }
  };

  const ignore = (): void => {};
  const acquire = {
    start(ctx: AcquireContext): void {
      const parent = otelContext.active();
      const span = tracer?.startSpan(SPANS.WAIT, { attributes: { [ATTR.KIND]: ctx.kind, [ATTR.NAME]: ctx.name } }, parent);
      waiting.set(ctx, { span, parent });
    },
    end: ignore,
    asyncStart: ignore,
    error: ignore,
    asyncEnd(ctx: AcquireContext): void {
      const started = waiting.get(ctx);
      waiting.delete(ctx);
      const outcome = ctx.outcome ?? 'error';
      waitHistogram?.record(ctx.waitedMs / 1000, metricAttrs(ctx.kind, ctx.name, { [ATTR.OUTCOME]: outcome }));
      acquisitions?.add(1, metricAttrs(ctx.kind, ctx.name, { [ATTR.OUTCOME]: outcome }));
      const facts: Attributes = { [ATTR.KIND]: ctx.kind, [ATTR.NAME]: ctx.name };
      if (ctx.fingerprint !== undefined) facts[ATTR.FINGERPRINT] = ctx.fingerprint;
      if (ctx.token !== undefined) facts[ATTR.TOKEN] = ctx.token;
      if (ctx.holdCount !== undefined) facts[ATTR.HOLD_COUNT] = ctx.holdCount;
      if (ctx.permits !== undefined) facts[ATTR.PERMITS] = ctx.permits;
      const span = started?.span;
      if (span) {
        span.setAttributes({ ...facts, [ATTR.OUTCOME]: outcome, [ATTR.ATTEMPTS]: ctx.attempts });
        if (outcome === 'error') {
          const error = ctx.error instanceof Error ? ctx.error : new Error(String(ctx.error));
          span.recordException(error);
          span.setStatus({ code: SpanStatusCode.ERROR, message: error.message });
        }
        span.end();
      }
      if (outcome !== 'acquired') return;
      const attrs = metricAttrs(ctx.kind, ctx.name, {});
      const key = holdKey(ctx.kind, ctx.name, ctx.fingerprint);
      const holdSpan = tracer?.startSpan(SPANS.HOLD, { attributes: facts }, started?.parent ?? otelContext.active());
      live.set(ctx.id, { key, kind: ctx.kind, at: performance.now(), attrs, span: holdSpan });
      let ids = byHold.get(key);
      if (!ids) byHold.set(key, (ids = new Set()));
      ids.add(ctx.id);
      heldNow?.add(1, attrs);
    },
  };
  const release = {
    start: ignore,
    end: ignore,
    asyncStart: ignore,
    error: ignore,
    asyncEnd(ctx: ReleaseContext): void {
      if (ctx.id !== undefined) end(ctx.id, ctx.outcome ?? 'error');
    },
  };
  const onLost = (message: unknown): void => {
    const m = message as LostMessage;
    lostCounter?.add(1, metricAttrs(m.kind, m.name, { [ATTR.LOST_REASON]: m.reason }));
    const ids = byHold.get(holdKey(m.kind, m.name, m.fingerprint));
    if (ids) for (const id of [...ids]) end(id, 'lost', { reason: m.reason, message: m.error.message });
  };
  const onRenew = (message: unknown): void => {
    const m = message as RenewMessage;
    renewals?.add(1, metricAttrs(m.kind, m.name, { [ATTR.RENEW_RESULT]: m.result }));
    spansOf(m.kind, m.name, m.fingerprint, (span) => span.addEvent('renew', { [ATTR.RENEW_RESULT]: m.result, 'holdfast.renew.source': m.source }));
  };
  const onHandoff = (message: unknown): void => {
    const m = message as HandoffMessage;
    spansOf(m.kind, m.name, m.fingerprint, (span) => span.addEvent(`handoff ${m.stage}`, { [ATTR.TOKEN]: m.token }));
  };
  const spansOf = (kind: string, name: string, fp: string, fn: (span: Span) => void): void => {
    const ids = byHold.get(holdKey(kind, name, fp));
    if (!ids) return;
    for (const id of ids) {
      const span = live.get(id)?.span;
      if (span) fn(span);
    }
  };

  const acquireChannel = dc.tracingChannel<unknown, AcquireContext>(CHANNELS.acquire);
  const releaseChannel = dc.tracingChannel<unknown, ReleaseContext>(CHANNELS.release);
  acquireChannel.subscribe(acquire);
  releaseChannel.subscribe(release);
  dc.subscribe(CHANNELS.lost, onLost);
  dc.subscribe(CHANNELS.renew, onRenew);
  dc.subscribe(CHANNELS.handoff, onHandoff);
  let enabled = true;
  const disable = (): void => {
    if (!enabled) return;
    enabled = false;
    acquireChannel.unsubscribe(acquire);
    releaseChannel.unsubscribe(release);
    dc.unsubscribe(CHANNELS.lost, onLost);
    dc.unsubscribe(CHANNELS.renew, onRenew);
    dc.unsubscribe(CHANNELS.handoff, onHandoff);
  };
  return { disable, [Symbol.dispose]: disable };
}

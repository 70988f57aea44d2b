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
import dc, { type TracingChannelSubscribers } from 'node:diagnostics_channel';
import {
  metrics,
  SpanStatusCode,
  trace,
  type Attributes,
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
  /** ms from the `acquire()` call to its end. */
  WAITED: 'holdfast.acquire.waited_ms',
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
  /** Observable UpDownCounter: holds held now in this process, by kind (read at collection, nothing per hold). */
  HELD: 'holdfast.held',
  /** Counter: lease renewals, by kind and result. */
  RENEWALS: 'holdfast.renewals',
} as const;

/** The span names holdfast records. */
export const SPANS = {
  /** From the `acquire()` call to its end, for an acquisition that waited (see `waitSpans`). */
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
  /**
   * Which acquisitions get a wait span: `contended` — those that waited (more than one attempt, or not acquired);
   * `all` — every one, also those that got the lock at the first attempt.
   * @default 'contended'
   */
  waitSpans?: 'contended' | 'all';
}

/** A running instrumentation: `disable()` (or `using`) unsubscribes it. */
export interface HoldfastInstrumentation extends Disposable {
  /** Stops recording. Idempotent. */
  disable(): void;
}

const SCOPE = 'holdfast';

/** One acquisition held now. */
interface Live {
  /** kind + name + fingerprint: the hold it belongs to. */
  readonly key: string;
  readonly kind: string;
  readonly name: string;
  readonly at: number;
  readonly span: Span | undefined;
}

/**
 * Subscribes to holdfast's diagnostics channels and records OpenTelemetry metrics ({@link METRICS}) and spans
 * ({@link SPANS}) with the attributes of {@link ATTR}. Call it once, after the SDK is set up.
 *
 * The spans are children of the context active where `acquire()` was called. A hold span starts when the acquisition
 * returns and ends at its release or loss (in error, with the reason). A wait span is recorded for an acquisition
 * that waited (more than one attempt, or not acquired): one that got the lock at its first attempt did not wait, and
 * its hold span carries the attempts and the time the call took.
 */
export function instrumentHoldfast(options: HoldfastOtelOptions = {}): HoldfastInstrumentation {
  const withSpans = options.spans ?? true;
  const withMetrics = options.metrics ?? true;
  const nameInMetrics = options.nameInMetrics ?? false;
  const allWaits = options.waitSpans === 'all';
  const tracer = withSpans ? (options.tracerProvider ?? trace.getTracerProvider()).getTracer(SCOPE) : undefined;
  const meter = withMetrics ? (options.meterProvider ?? metrics.getMeterProvider()).getMeter(SCOPE) : undefined;
  const waitHistogram = meter?.createHistogram(METRICS.WAIT, { unit: 's', description: 'How long holdfast acquisitions waited' });
  const holdHistogram = meter?.createHistogram(METRICS.HOLD, { unit: 's', description: 'How long holdfast holds were held' });
  const acquisitions = meter?.createCounter(METRICS.ACQUISITIONS, { description: 'holdfast acquisitions, by outcome' });
  const lostCounter = meter?.createCounter(METRICS.LOST, { description: 'holdfast holds lost, by reason' });
  const heldNow = meter?.createObservableUpDownCounter(METRICS.HELD, { description: 'holdfast holds held now in this process' });
  const renewals = meter?.createCounter(METRICS.RENEWALS, { description: 'holdfast lease renewals, by result' });

  const live = new Map<number, Live>();
  /** kind + name + fingerprint → the acquisitions of that hold (a loss ends them all). */
  const byHold = new Map<string, Set<number>>();
  const holdKey = (kind: string, name: string, fp: string | undefined): string => `${kind}\0${name}\0${fp ?? ''}`;

  /**
   * Metric attributes for `kind` (and `name`, with `nameInMetrics`) plus one attribute `key` = `value`: made once per
   * combination and reused (the SDK reads them on every record).
   */
  const attrCache = new Map<string, Map<string, Map<string, Attributes>>>();
  const metricAttrs = (kind: string, name: string, key: string | undefined, value: string | undefined): Attributes => {
    const series = nameInMetrics ? `${kind}\0${name}` : kind;
    let byKey = attrCache.get(series);
    if (byKey === undefined) attrCache.set(series, (byKey = new Map()));
    let byValue = byKey.get(key ?? '');
    if (byValue === undefined) byKey.set(key ?? '', (byValue = new Map()));
    let attrs = byValue.get(value ?? '');
    if (attrs === undefined) {
      attrs = { [ATTR.KIND]: kind };
      if (nameInMetrics) attrs[ATTR.NAME] = name;
      if (key !== undefined) attrs[key] = value;
      byValue.set(value ?? '', attrs);
    }
    return attrs;
  };
  /** The series the held-now gauge has reported, so that one whose holds all ended reads 0, not its last value. */
  const reported = new Map<string, Attributes>();
  heldNow?.addCallback((result) => {
    const counts = new Map<string, number>();
    for (const hold of live.values()) {
      const id = nameInMetrics ? `${hold.kind}\0${hold.name}` : hold.kind;
      counts.set(id, (counts.get(id) ?? 0) + 1);
      if (!reported.has(id)) reported.set(id, metricAttrs(hold.kind, hold.name, undefined, undefined));
    }
    for (const [id, attrs] of reported) result.observe(counts.get(id) ?? 0, attrs);
  });

  const end = (id: number, how: string, error?: { reason: string; message: string }): void => {
    const hold = live.get(id);
    if (!hold) return;
    live.delete(id);
    const ids = byHold.get(hold.key);
    ids?.delete(id);
    if (ids?.size === 0) byHold.delete(hold.key);
    holdHistogram?.record((performance.now() - hold.at) / 1000, metricAttrs(hold.kind, hold.name, ATTR.HOLD_END, how));
    const span = hold.span;
    if (span) {
      span.setAttribute(ATTR.HOLD_END, how);
      if (error) {
        span.setAttribute(ATTR.LOST_REASON, error.reason);
        span.setStatus({ code: SpanStatusCode.ERROR, message: error.message });
      }
      span.end();
    }
  };

  // Only `asyncEnd` is subscribed: a tracing channel's other events then stay off and cost nothing.
  const acquire = {
    // Published from the acquire() promise's continuation, which runs in the caller's context: the spans' parent.
    asyncEnd(ctx: AcquireContext): void {
      const at = performance.now();
      const outcome = ctx.outcome ?? 'error';
      const byOutcome = metricAttrs(ctx.kind, ctx.name, ATTR.OUTCOME, outcome);
      waitHistogram?.record(ctx.waitedMs / 1000, byOutcome);
      acquisitions?.add(1, byOutcome);
      const acquired = outcome === 'acquired';
      let attrs: Attributes | undefined;
      if (tracer) {
        attrs = { [ATTR.KIND]: ctx.kind, [ATTR.NAME]: ctx.name, [ATTR.ATTEMPTS]: ctx.attempts, [ATTR.WAITED]: ctx.waitedMs };
        if (ctx.fingerprint !== undefined) attrs[ATTR.FINGERPRINT] = ctx.fingerprint;
        if (ctx.token !== undefined) attrs[ATTR.TOKEN] = ctx.token;
        if (ctx.holdCount !== undefined) attrs[ATTR.HOLD_COUNT] = ctx.holdCount;
        if (ctx.permits !== undefined) attrs[ATTR.PERMITS] = ctx.permits;
        if (allWaits || !acquired || ctx.attempts > 1) {
          // recorded at the end, dated back to the call: an uncontended acquisition makes no wait span at all
          const span = tracer.startSpan(SPANS.WAIT, { startTime: at - ctx.waitedMs, attributes: { ...attrs, [ATTR.OUTCOME]: outcome } });
          if (outcome === 'error') {
            const error = ctx.error instanceof Error ? ctx.error : new Error(String(ctx.error));
            span.recordException(error);
            span.setStatus({ code: SpanStatusCode.ERROR, message: error.message });
          }
          span.end(at);
        }
      }
      if (!acquired) return;
      const key = holdKey(ctx.kind, ctx.name, ctx.fingerprint);
      live.set(ctx.id, { key, kind: ctx.kind, name: ctx.name, at, span: tracer && attrs ? tracer.startSpan(SPANS.HOLD, { startTime: at, attributes: attrs }) : undefined });
      let ids = byHold.get(key);
      if (!ids) byHold.set(key, (ids = new Set()));
      ids.add(ctx.id);
    },
  };
  const release = {
    asyncEnd(ctx: ReleaseContext): void {
      if (ctx.id !== undefined) end(ctx.id, ctx.outcome ?? 'error');
    },
  };
  const onLost = (message: unknown): void => {
    const m = message as LostMessage;
    lostCounter?.add(1, metricAttrs(m.kind, m.name, ATTR.LOST_REASON, m.reason));
    const ids = byHold.get(holdKey(m.kind, m.name, m.fingerprint));
    if (ids) for (const id of [...ids]) end(id, 'lost', { reason: m.reason, message: m.error.message });
  };
  const onRenew = (message: unknown): void => {
    const m = message as RenewMessage;
    renewals?.add(1, metricAttrs(m.kind, m.name, ATTR.RENEW_RESULT, m.result));
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
  // (Node accepts a partial set of handlers; its types ask for all five)
  acquireChannel.subscribe(acquire as TracingChannelSubscribers<AcquireContext>);
  releaseChannel.subscribe(release as TracingChannelSubscribers<ReleaseContext>);
  dc.subscribe(CHANNELS.lost, onLost);
  dc.subscribe(CHANNELS.renew, onRenew);
  dc.subscribe(CHANNELS.handoff, onHandoff);
  let enabled = true;
  const disable = (): void => {
    if (!enabled) return;
    enabled = false;
    acquireChannel.unsubscribe(acquire as TracingChannelSubscribers<AcquireContext>);
    releaseChannel.unsubscribe(release as TracingChannelSubscribers<ReleaseContext>);
    dc.unsubscribe(CHANNELS.lost, onLost);
    dc.unsubscribe(CHANNELS.renew, onRenew);
    dc.unsubscribe(CHANNELS.handoff, onHandoff);
  };
  return { disable, [Symbol.dispose]: disable };
}

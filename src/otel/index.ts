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
  type ObservableResult,
  type Span,
  type TracerProvider,
} from '@opentelemetry/api';
import { CHANNELS, type AcquireContext, type ElectionMessage, type HandoffMessage, type LostMessage, type ReleaseContext, type RenewMessage } from '../diagnostics.js';

/** The attribute names holdfast puts on its spans and metrics. */
export const ATTR = {
  /**
   * Which primitive: `lock`, `fair-lock`, `read-lock`, `write-lock`, `semaphore`, `permit-semaphore`, `multi-lock`,
   * `redlock`, `redlock-semaphore`, `election`; on ZooKeeper `zk-lock`, `zk-read-lock`, `zk-write-lock`, `zk-semaphore`,
   * `zk-election`.
   */
  KIND: 'holdfast.kind',
  /** The lock's name (on spans; on metrics only with `nameInMetrics`). */
  NAME: 'holdfast.lock.name',
  /** The holder's fingerprint (a hash of the owner id, never the id). */
  FINGERPRINT: 'holdfast.owner.fingerprint',
  /** The holder's client label (the `label` client option), when it has one. */
  LABEL: 'holdfast.owner.label',
  /** How the acquisition ended: `acquired`, `timed-out`, `aborted`, `error`. */
  OUTCOME: 'holdfast.acquire.outcome',
  /** Attempts made (calls to Redis; on ZooKeeper, looks at the queue). */
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
  /** Observable counter: acquisitions, by kind and outcome (counted here, read at collection). */
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

/**
 * One metric series: a kind (and a lock name, with `nameInMetrics`). It keeps the attribute objects of its data
 * points, made once and reused (the SDK reads them on every record), the acquisitions counted by outcome, and the
 * holds held now.
 */
interface Series {
  /** `holdfast.kind` (and `holdfast.lock.name`): the held-now gauge's attributes. */
  readonly attrs: Attributes;
  /** By outcome: the attributes of the wait histogram and of the acquisitions counter, and that count. */
  readonly outcomes: Map<string, { readonly attrs: Attributes; count: number }>;
  /** By the second attribute's name, then its value (hold end, lost reason, renewal result). */
  readonly others: Map<string, Map<string, Attributes>>;
  /** Holds held now. */
  held: number;
}

/** One acquisition held now. */
interface Live {
  readonly id: number;
  readonly series: Series;
  /** kind + name + fingerprint: the hold it belongs to (a loss ends all of its acquisitions). */
  readonly key: string;
  readonly at: number;
  readonly span: Span | undefined;
  /** The other acquisitions of the same hold (reentrant ones), as a list. */
  next: Live | undefined;
  prev: Live | undefined;
}

/**
 * Subscribes to holdfast's diagnostics channels and records OpenTelemetry metrics ({@link METRICS}) and spans
 * ({@link SPANS}) with the attributes of {@link ATTR}. Call it once, after the SDK is set up.
 *
 * The spans are children of the context active where `acquire()` was called. A hold span starts when the acquisition
 * returns and ends at its release or loss (in error, with the reason). A wait span is recorded for an acquisition
 * that waited (more than one attempt, or not acquired): one that got the lock at its first attempt did not wait, and
 * its hold span carries the attempts and the time the call took.
 *
 * Per acquisition and release the bridge makes two histogram records, and with spans one hold span; the
 * acquisitions and the holds held now are counted here and read by the SDK at collection.
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
  const acquisitions = meter?.createObservableCounter(METRICS.ACQUISITIONS, { description: 'holdfast acquisitions, by outcome' });
  const lostCounter = meter?.createCounter(METRICS.LOST, { description: 'holdfast holds lost, by reason' });
  const heldNow = meter?.createObservableUpDownCounter(METRICS.HELD, { description: 'holdfast holds held now in this process' });
  const renewals = meter?.createCounter(METRICS.RENEWALS, { description: 'holdfast lease renewals, by result' });

  /** The series by kind (and, with `nameInMetrics`, by name under it). */
  const byKind = new Map<string, Series>();
  const byKindAndName = new Map<string, Map<string, Series>>();
  const seriesOf = (kind: string, name: string): Series => {
    let series: Series | undefined;
    let names: Map<string, Series> | undefined;
    if (nameInMetrics) {
      names = byKindAndName.get(kind);
      if (names === undefined) byKindAndName.set(kind, (names = new Map()));
      series = names.get(name);
    } else {
      series = byKind.get(kind);
    }
    if (series === undefined) {
      series = { attrs: nameInMetrics ? { [ATTR.KIND]: kind, [ATTR.NAME]: name } : { [ATTR.KIND]: kind }, outcomes: new Map(), others: new Map(), held: 0 };
      if (names) names.set(name, series);
      else byKind.set(kind, series);
    }
    return series;
  };
  const allSeries = function* (): Generator<Series> {
    yield* byKind.values();
    for (const names of byKindAndName.values()) yield* names.values();
  };
  /** The series' attributes plus `key` = `value`. */
  const attrsOf = (series: Series, key: string, value: string): Attributes => {
    let byValue = series.others.get(key);
    if (byValue === undefined) series.others.set(key, (byValue = new Map()));
    let attrs = byValue.get(value);
    if (attrs === undefined) byValue.set(value, (attrs = { ...series.attrs, [key]: value }));
    return attrs;
  };
  const outcomeOf = (series: Series, outcome: string): { readonly attrs: Attributes; count: number } => {
    let tally = series.outcomes.get(outcome);
    if (tally === undefined) series.outcomes.set(outcome, (tally = { attrs: { ...series.attrs, [ATTR.OUTCOME]: outcome }, count: 0 }));
    return tally;
  };

  // Read at collection: nothing per acquisition but a count. A series whose holds all ended reads 0.
  const observeAcquisitions = (result: ObservableResult): void => {
    for (const series of allSeries()) for (const tally of series.outcomes.values()) result.observe(tally.count, tally.attrs);
  };
  const observeHeld = (result: ObservableResult): void => {
    for (const series of allSeries()) result.observe(series.held, series.attrs);
  };
  acquisitions?.addCallback(observeAcquisitions);
  heldNow?.addCallback(observeHeld);

  const live = new Map<number, Live>();
  /** The first live acquisition of each hold (kind + name + fingerprint); the others follow it (`next`). */
  const byHold = new Map<string, Live>();

  const end = (id: number, how: string, error?: { reason: string; message: string }): void => {
    const hold = live.get(id);
    if (!hold) return;
    live.delete(id);
    if (hold.prev) hold.prev.next = hold.next;
    else if (hold.next) byHold.set(hold.key, hold.next);
    else byHold.delete(hold.key);
    if (hold.next) hold.next.prev = hold.prev;
    const series = hold.series;
    series.held--;
    holdHistogram?.record((performance.now() - hold.at) / 1000, attrsOf(series, ATTR.HOLD_END, how));
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
      const series = seriesOf(ctx.kind, ctx.name);
      const tally = outcomeOf(series, outcome);
      tally.count++;
      waitHistogram?.record(ctx.waitedMs / 1000, tally.attrs);
      const acquired = outcome === 'acquired';
      let span: Span | undefined;
      if (tracer) {
        const attrs: Attributes = { [ATTR.KIND]: ctx.kind, [ATTR.NAME]: ctx.name, [ATTR.ATTEMPTS]: ctx.attempts, [ATTR.WAITED]: ctx.waitedMs };
        if (ctx.fingerprint !== undefined) attrs[ATTR.FINGERPRINT] = ctx.fingerprint;
        if (ctx.label !== undefined) attrs[ATTR.LABEL] = ctx.label;
        if (ctx.token !== undefined) attrs[ATTR.TOKEN] = ctx.token;
        if (ctx.holdCount !== undefined) attrs[ATTR.HOLD_COUNT] = ctx.holdCount;
        if (ctx.permits !== undefined) attrs[ATTR.PERMITS] = ctx.permits;
        if (allWaits || !acquired || ctx.attempts > 1) {
          // recorded at the end, dated back to the call: an uncontended acquisition makes no wait span at all
          const wait = tracer.startSpan(SPANS.WAIT, { startTime: at - ctx.waitedMs, attributes: { ...attrs, [ATTR.OUTCOME]: outcome } });
          if (outcome === 'error') {
            const error = ctx.error instanceof Error ? ctx.error : new Error(String(ctx.error));
            wait.recordException(error);
            wait.setStatus({ code: SpanStatusCode.ERROR, message: error.message });
          }
          wait.end(at);
        }
        if (acquired) span = tracer.startSpan(SPANS.HOLD, { startTime: at, attributes: attrs });
      }
      if (!acquired) return;
      const key = `${ctx.kind}\0${ctx.name}\0${ctx.fingerprint ?? ''}`;
      const first = byHold.get(key);
      const hold: Live = { id: ctx.id, series, key, at, span, next: first, prev: undefined };
      if (first) first.prev = hold;
      byHold.set(key, hold);
      live.set(ctx.id, hold);
      series.held++;
    },
  };
  const release = {
    asyncEnd(ctx: ReleaseContext): void {
      if (ctx.id !== undefined) end(ctx.id, ctx.outcome ?? 'error');
    },
  };
  const onLost = (message: unknown): void => {
    const m = message as LostMessage;
    lostCounter?.add(1, attrsOf(seriesOf(m.kind, m.name), ATTR.LOST_REASON, m.reason));
    const ids: number[] = [];
    for (let hold = byHold.get(`${m.kind}\0${m.name}\0${m.fingerprint}`); hold; hold = hold.next) ids.push(hold.id);
    for (const id of ids) end(id, 'lost', { reason: m.reason, message: m.error.message });
  };
  const onRenew = (message: unknown): void => {
    const m = message as RenewMessage;
    renewals?.add(1, attrsOf(seriesOf(m.kind, m.name), ATTR.RENEW_RESULT, m.result));
    spansOf(m.kind, m.name, m.fingerprint, (span) => span.addEvent('renew', { [ATTR.RENEW_RESULT]: m.result, 'holdfast.renew.source': m.source }));
  };
  const onHandoff = (message: unknown): void => {
    const m = message as HandoffMessage;
    spansOf(m.kind, m.name, m.fingerprint, (span) => span.addEvent(`handoff ${m.stage}`, { [ATTR.TOKEN]: m.token }));
  };
  // an election's steps on its leadership's hold span (the campaign is traced as an acquisition of kind `election`)
  const onElection = (message: unknown): void => {
    const m = message as ElectionMessage;
    spansOf(m.kind, m.name, m.fingerprint, (span) =>
      span.addEvent(`election ${m.event}`, { [ATTR.TOKEN]: m.term, 'holdfast.election.label': m.label, ...(m.reason === undefined ? {} : { [ATTR.LOST_REASON]: m.reason }) }),
    );
  };
  const spansOf = (kind: string, name: string, fp: string, fn: (span: Span) => void): void => {
    for (let hold = byHold.get(`${kind}\0${name}\0${fp}`); hold; hold = hold.next) if (hold.span) fn(hold.span);
  };

  const acquireChannel = dc.tracingChannel<unknown, AcquireContext>(CHANNELS.acquire);
  const releaseChannel = dc.tracingChannel<unknown, ReleaseContext>(CHANNELS.release);
  // (Node accepts a partial set of handlers; its types ask for all five)
  acquireChannel.subscribe(acquire as TracingChannelSubscribers<AcquireContext>);
  releaseChannel.subscribe(release as TracingChannelSubscribers<ReleaseContext>);
  dc.subscribe(CHANNELS.lost, onLost);
  dc.subscribe(CHANNELS.renew, onRenew);
  dc.subscribe(CHANNELS.handoff, onHandoff);
  dc.subscribe(CHANNELS.election, onElection);
  let enabled = true;
  const disable = (): void => {
    if (!enabled) return;
    enabled = false;
    acquireChannel.unsubscribe(acquire as TracingChannelSubscribers<AcquireContext>);
    releaseChannel.unsubscribe(release as TracingChannelSubscribers<ReleaseContext>);
    dc.unsubscribe(CHANNELS.lost, onLost);
    dc.unsubscribe(CHANNELS.renew, onRenew);
    dc.unsubscribe(CHANNELS.handoff, onHandoff);
    dc.unsubscribe(CHANNELS.election, onElection);
    acquisitions?.removeCallback(observeAcquisitions);
    heldNow?.removeCallback(observeHeld);
  };
  return { disable, [Symbol.dispose]: disable };
}

/**
 * Publishing on holdfast's diagnostics channels (names and payloads: src/diagnostics.ts). Every helper first asks
 * the channel whether anyone listens and, when no one does, costs one property check: no object, no hash, no clock
 * read. The hooks sit where every primitive passes: each primitive's `acquire`/`tryAcquire` (through
 * {@link traceAcquire}), `Held.release` (every held object), and the hold engines' lease callbacks (lost, renew):
 * the Redis one (internal/hold.ts) and the ZooKeeper one (zookeeper/hold.ts).
 *
 * With subscribers, an acquisition or a release costs one context object and one promise step, and a hold hashes its
 * owner id once (the fingerprint, which the hold keeps). The tracing events are those of `tracePromise`, in its order
 * and with its store handling (`start.runStores`), published here rather than through it: it would take two more
 * promise steps and two closures per call, and put the held object on the context.
 */
import dc from 'node:diagnostics_channel';
import {
  CHANNELS,
  fingerprint,
  type AcquireContext,
  type AcquireOutcome,
  type ElectionMessage,
  type HandoffMessage,
  type LostMessage,
  type PrimitiveKind,
  type ReleaseContext,
  type ReleaseOutcome,
  type RenewMessage,
} from '../diagnostics.js';
import { AcquireTimeoutError, LockNotHeldError, ReleaseFailedError, type LockLostError } from '../errors.js';
import { heldKindOf } from '../kinds.js';
import { now } from './clock.js';
import { localLabelOf } from './label.js';

const acquireChannel = dc.tracingChannel<unknown, AcquireContext>(CHANNELS.acquire);
const releaseChannel = dc.tracingChannel<unknown, ReleaseContext>(CHANNELS.release);
const lostChannel = dc.channel(CHANNELS.lost);
const renewChannel = dc.channel(CHANNELS.renew);
const handoffChannel = dc.channel(CHANNELS.handoff);
const electionChannel = dc.channel(CHANNELS.election);

/** What a held object tells the channels about itself (never the owner id: its fingerprint). */
export interface HeldFacts {
  readonly kind: PrimitiveKind;
  readonly name: string;
  readonly fingerprint?: string | undefined;
  readonly token?: number | undefined;
  readonly holdCount?: number | undefined;
  readonly permits?: number | undefined;
}

/** A held object that can describe itself (see `Held`). */
export interface Describable {
  /** @internal */
  diagnostics(): HeldFacts | undefined;
  /** @internal The traced acquisition that returned this object, set by {@link traceAcquire}: its release repeats its facts. */
  acquisition: AcquireContext | undefined;
  /** @internal When that acquisition ended ({@link now}). */
  acquiredAt: number;
}

/** A hold as the lease callbacks report it: its fingerprint (computed on first use and kept) and token. */
export interface TracedHold {
  readonly fingerprint: string;
  readonly token: number;
}

/** The channel kind of a hold engine `kind` word (the registry's, src/kinds.ts). */
export function kindOf(engineKind: string): PrimitiveKind {
  return heldKindOf(engineKind);
}

/**
 * Acquisition ids, unique in the process: every copy of holdfast loaded in it (ESM and CJS builds, entry points
 * bundled apart) counts on the same counter, as the channels they publish on are the same.
 */
const ids = ((globalThis as Record<symbol, unknown>)[Symbol.for('holdfast.diagnostics.ids')] ??= { last: 0 }) as { last: number };

/**
 * Runs one acquisition, inside the `holdfast:acquire` tracing channel when anyone listens. `run` gets the context
 * (to count attempts: see `WaitOptions.trace`), or `undefined` when no one listens.
 */
export function traceAcquire<T>(kind: PrimitiveKind, name: string, options: unknown, run: (trace: AcquireContext | undefined) => Promise<T>): Promise<T> {
  if (!acquireChannel.hasSubscribers) return run(undefined);
  const start = now();
  const owner = optionOf(options, 'owner');
  const ctx: AcquireContext = {
    id: ++ids.last,
    kind,
    name,
    fingerprint: typeof owner === 'string' ? fingerprint(owner) : undefined,
    label: localLabelOf(owner),
    attempts: 0,
    waitedMs: 0,
    outcome: undefined,
    token: undefined,
    holdCount: undefined,
    permits: undefined,
  };
  // `start` (and the stores bound to it) around the call, as `tracePromise` does: the continuation, which publishes
  // the async events, runs in the context entered there
  const channel = acquireChannel.start;
  return channel.hasSubscribers ? channel.runStores(ctx, acquireTraced<T>, undefined, ctx, start, options, run) : acquireTraced(ctx, start, options, run);
}

/**
 * The acquisition and the tracing events after `start`, in `tracePromise`'s order: `end` once the call returned its
 * promise, then `error` (when it rejects), `asyncStart` and `asyncEnd`. The context is complete before `asyncStart`.
 * The held object is never put on it (`tracePromise` would set `result`): it knows the owner id.
 */
async function acquireTraced<T>(ctx: AcquireContext, start: number, options: unknown, run: (trace: AcquireContext) => Promise<T>): Promise<T> {
  let pending: Promise<T>;
  try {
    pending = run(ctx);
  } catch (error) {
    pending = Promise.reject(error); // (a primitive's run is async: it never throws here)
  }
  const channel = acquireChannel;
  channel.end.publish(ctx);
  let result: T;
  try {
    result = await pending;
  } catch (error) {
    failed(ctx, start, error, options);
    ctx.error = error;
    channel.error.publish(ctx);
    channel.asyncStart.publish(ctx);
    channel.asyncEnd.publish(ctx);
    throw error;
  }
  acquired(ctx, start, result);
  channel.asyncStart.publish(ctx);
  channel.asyncEnd.publish(ctx);
  return result;
}

/** Completes `ctx` for an acquisition that returned `result` (`null`: not acquired) and links the held object to it. */
function acquired(ctx: AcquireContext, start: number, result: unknown): void {
  const at = now();
  ctx.waitedMs = at - start;
  if (result === null) {
    ctx.outcome = 'timed-out';
    return;
  }
  ctx.outcome = 'acquired';
  const held = result as Partial<Describable> | undefined;
  const facts = held?.diagnostics?.();
  if (!facts) return;
  if (facts.fingerprint !== undefined) ctx.fingerprint = facts.fingerprint;
  ctx.label ??= localLabelOf(ownerOf(held));
  ctx.token = facts.token;
  ctx.holdCount = facts.holdCount;
  ctx.permits = facts.permits;
  (held as Describable).acquisition = ctx;
  (held as Describable).acquiredAt = at;
}

function failed(ctx: AcquireContext, start: number, error: unknown, options: unknown): void {
  ctx.waitedMs = now() - start;
  ctx.outcome = outcomeOf(error, options);
}

/** The owner id of a held object (a permit's id), to find its client's label. */
function ownerOf(held: unknown): unknown {
  if (typeof held !== 'object' || held === null) return undefined;
  const h = held as { owner?: unknown; id?: unknown };
  return h.owner ?? h.id;
}

function optionOf(options: unknown, key: string): unknown {
  return typeof options === 'object' && options !== null ? (options as Record<string, unknown>)[key] : undefined;
}

function outcomeOf(error: unknown, options: unknown): AcquireOutcome {
  if (error instanceof AcquireTimeoutError) return 'timed-out';
  const signal = optionOf(options, 'signal');
  if (signal instanceof AbortSignal && signal.aborted && signal.reason === error) return 'aborted';
  return 'error';
}

/** Runs one release of `held`, inside the `holdfast:release` tracing channel when anyone listens. */
export function traceRelease(held: Describable, run: () => Promise<void>): Promise<void> {
  if (!releaseChannel.hasSubscribers) return run();
  const acquisition = held.acquisition;
  let ctx: ReleaseContext;
  if (acquisition !== undefined) {
    // what the acquisition found out already: no second description, no second hash
    ctx = {
      id: acquisition.id,
      kind: acquisition.kind,
      name: acquisition.name,
      fingerprint: acquisition.fingerprint,
      label: acquisition.label,
      token: acquisition.token,
      heldMs: now() - held.acquiredAt,
      outcome: undefined,
    };
  } else {
    const facts = held.diagnostics();
    if (!facts) return run();
    ctx = {
      id: undefined,
      kind: facts.kind,
      name: facts.name,
      fingerprint: facts.fingerprint,
      label: localLabelOf(ownerOf(held)),
      token: facts.token,
      heldMs: undefined,
      outcome: undefined,
    };
  }
  const channel = releaseChannel.start;
  return channel.hasSubscribers ? channel.runStores(ctx, releaseTraced, undefined, ctx, run) : releaseTraced(ctx, run);
}

/** The release and its tracing events after `start` (see {@link acquireTraced}). */
async function releaseTraced(ctx: ReleaseContext, run: () => Promise<void>): Promise<void> {
  let pending: Promise<void>;
  try {
    pending = run();
  } catch (error) {
    pending = Promise.reject(error);
  }
  const channel = releaseChannel;
  channel.end.publish(ctx);
  try {
    await pending;
  } catch (error) {
    ctx.outcome = releaseOutcome(error);
    ctx.error = error;
    channel.error.publish(ctx);
    channel.asyncStart.publish(ctx);
    channel.asyncEnd.publish(ctx);
    throw error;
  }
  ctx.outcome = 'released';
  channel.asyncStart.publish(ctx);
  channel.asyncEnd.publish(ctx);
}

function releaseOutcome(error: unknown): ReleaseOutcome {
  return error instanceof LockNotHeldError ? 'not-held' : error instanceof ReleaseFailedError ? 'failed' : 'error';
}

/** Publishes a lost hold on `holdfast:lost` (`kind`: a hold engine's word or a channel kind, see {@link kindOf}). */
export function publishLost(kind: string, name: string, hold: TracedHold, error: LockLostError): void {
  if (!lostChannel.hasSubscribers) return;
  const message: LostMessage = { kind: kindOf(kind), name, fingerprint: hold.fingerprint, label: localLabelOf(ownerOf(hold)), token: hold.token, reason: error.reason, error };
  lostChannel.publish(message);
}

/** Runs one renewal (`renew()`), publishing its result on `holdfast:renew` when anyone listens (`kind` as for {@link publishLost}). */
export function traceRenew(
  kind: string,
  name: string,
  hold: TracedHold,
  leaseMs: number,
  source: RenewMessage['source'],
  renew: () => Promise<boolean>,
): Promise<boolean> {
  if (!renewChannel.hasSubscribers) return renew();
  const start = now();
  const publish = (result: RenewMessage['result'], error?: unknown): void => {
    const message: RenewMessage = {
      kind: kindOf(kind),
      name,
      fingerprint: hold.fingerprint,
      label: localLabelOf(ownerOf(hold)),
      token: hold.token,
      source,
      leaseMs,
      result,
      durationMs: now() - start,
      ...(error === undefined ? {} : { error }),
    };
    renewChannel.publish(message);
  };
  return renew().then(
    (ok) => {
      publish(ok ? 'renewed' : 'not-held');
      return ok;
    },
    (error: unknown) => {
      publish('error', error);
      throw error;
    },
  );
}

/** Publishes a fair-lock hand-off on `holdfast:handoff`. */
export function publishHandoff(name: string, hold: TracedHold, stage: HandoffMessage['stage']): void {
  if (!handoffChannel.hasSubscribers) return;
  const message: HandoffMessage = { kind: 'fair-lock', name, fingerprint: hold.fingerprint, label: localLabelOf(ownerOf(hold)), token: hold.token, stage };
  handoffChannel.publish(message);
}

/** Publishes one step of an election's candidate on `holdfast:election`. */
export function publishElection(
  kind: ElectionMessage['kind'],
  name: string,
  event: ElectionMessage['event'],
  term: number,
  label: string,
  fingerprint: string,
  reason?: ElectionMessage['reason'],
): void {
  if (!electionChannel.hasSubscribers) return;
  const message: ElectionMessage = { kind, name, event, term, label, fingerprint, ...(reason === undefined ? {} : { reason }) };
  electionChannel.publish(message);
}

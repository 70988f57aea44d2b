/**
 * Publishing on holdfast's diagnostics channels (names and payloads: src/diagnostics.ts). Every helper first asks
 * the channel whether anyone listens and, when no one does, costs one property check: no object, no hash, no clock
 * read. The hooks sit where every primitive passes: each primitive's `acquire`/`tryAcquire` (through
 * {@link traceAcquire}), `Held.release` (every held object), and the hold engine's lease callbacks (lost, renew).
 */
import dc from 'node:diagnostics_channel';
import {
  CHANNELS,
  fingerprint,
  type AcquireContext,
  type AcquireOutcome,
  type HandoffMessage,
  type LostMessage,
  type PrimitiveKind,
  type ReleaseContext,
  type RenewMessage,
} from '../diagnostics.js';
import { AcquireTimeoutError, LockNotHeldError, ReleaseFailedError, type LockLostError } from '../errors.js';
import { now } from './clock.js';

const acquireChannel = dc.tracingChannel<unknown, AcquireContext>(CHANNELS.acquire);
const releaseChannel = dc.tracingChannel<unknown, ReleaseContext>(CHANNELS.release);
const lostChannel = dc.channel(CHANNELS.lost);
const renewChannel = dc.channel(CHANNELS.renew);
const handoffChannel = dc.channel(CHANNELS.handoff);

/** What a held object tells the channels about itself (the raw owner id is fingerprinted before it is published). */
export interface HeldFacts {
  readonly kind: PrimitiveKind;
  readonly name: string;
  readonly owner?: string | undefined;
  readonly token?: number | undefined;
  readonly holdCount?: number | undefined;
  readonly permits?: number | undefined;
}

/** A held object that can describe itself (see `Held.diagnostics`). */
export interface Describable {
  diagnostics(): HeldFacts | undefined;
}

/** The hold engine's `kind` words (see `HoldOps.kind`) as channel kinds. */
const KINDS: Record<string, PrimitiveKind> = {
  lock: 'lock',
  'fair lock': 'fair-lock',
  'read lock': 'read-lock',
  'write lock': 'write-lock',
  permit: 'permit-semaphore',
  redlock: 'redlock',
};

/** The channel kind of a hold engine `kind` word. */
export function kindOf(engineKind: string): PrimitiveKind {
  return KINDS[engineKind] ?? (engineKind.replace(/ /g, '-') as PrimitiveKind);
}

let sequence = 0;
/** Acquisitions traced in this process: held object → its acquisition id, when it was acquired, its fingerprint. */
const traced = new WeakMap<object, { id: number; at: number; fingerprint: string | undefined }>();

/**
 * Runs one acquisition, inside the `holdfast:acquire` tracing channel when anyone listens. `run` gets the context
 * (to count attempts: see `WaitOptions.trace`), or `undefined` when no one listens.
 */
export function traceAcquire<T>(kind: PrimitiveKind, name: string, options: unknown, run: (trace: AcquireContext | undefined) => Promise<T>): Promise<T> {
  if (!acquireChannel.hasSubscribers) return run(undefined);
  return tracedAcquire(kind, name, options, run);
}

function tracedAcquire<T>(kind: PrimitiveKind, name: string, options: unknown, run: (trace: AcquireContext) => Promise<T>): Promise<T> {
  const start = now();
  const owner = optionOf(options, 'owner');
  const ctx: AcquireContext = {
    id: ++sequence,
    kind,
    name,
    fingerprint: typeof owner === 'string' ? fingerprint(owner) : undefined,
    attempts: 0,
    waitedMs: 0,
    outcome: undefined,
    token: undefined,
    holdCount: undefined,
    permits: undefined,
  };
  let value: T;
  // The traced promise resolves to nothing: the held object (which knows the owner id) never reaches a subscriber.
  const done = (result: T): undefined => {
    value = result;
    const at = now();
    ctx.waitedMs = at - start;
    ctx.outcome = result === null ? 'timed-out' : 'acquired';
    const facts = result === null ? undefined : (result as Partial<Describable> | undefined)?.diagnostics?.();
    if (facts) {
      if (facts.owner !== undefined) ctx.fingerprint = fingerprint(facts.owner);
      ctx.token = facts.token;
      ctx.holdCount = facts.holdCount;
      ctx.permits = facts.permits;
      traced.set(result as object, { id: ctx.id, at, fingerprint: ctx.fingerprint });
    }
    return undefined;
  };
  const failed = (error: unknown): never => {
    ctx.waitedMs = now() - start;
    ctx.outcome = outcomeOf(error, options);
    throw error;
  };
  return acquireChannel.tracePromise(() => run(ctx).then(done, failed), ctx).then(() => value);
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
  const facts = held.diagnostics();
  if (!facts) return run();
  const acquired = traced.get(held);
  const ctx: ReleaseContext = {
    id: acquired?.id,
    kind: facts.kind,
    name: facts.name,
    fingerprint: acquired?.fingerprint ?? (facts.owner === undefined ? undefined : fingerprint(facts.owner)),
    token: facts.token,
    heldMs: acquired ? now() - acquired.at : undefined,
    outcome: undefined,
  };
  return releaseChannel.tracePromise(
    () =>
      run().then(
        () => {
          ctx.outcome = 'released';
        },
        (error: unknown) => {
          ctx.outcome = error instanceof LockNotHeldError ? 'not-held' : error instanceof ReleaseFailedError ? 'failed' : 'error';
          throw error;
        },
      ),
    ctx,
  );
}

/** Publishes a lost hold on `holdfast:lost`. */
export function publishLost(engineKind: string, name: string, owner: string, token: number, error: LockLostError): void {
  if (!lostChannel.hasSubscribers) return;
  const message: LostMessage = { kind: kindOf(engineKind), name, fingerprint: fingerprint(owner), token, reason: error.reason, error };
  lostChannel.publish(message);
}

/** Runs one renewal (`renew()`), publishing its result on `holdfast:renew` when anyone listens. */
export function traceRenew(
  engineKind: string,
  name: string,
  owner: string,
  token: number,
  leaseMs: number,
  source: RenewMessage['source'],
  renew: () => Promise<boolean>,
): Promise<boolean> {
  if (!renewChannel.hasSubscribers) return renew();
  const start = now();
  const publish = (result: RenewMessage['result'], error?: unknown): void => {
    const message: RenewMessage = {
      kind: kindOf(engineKind),
      name,
      fingerprint: fingerprint(owner),
      token,
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
export function publishHandoff(name: string, owner: string, token: number, stage: HandoffMessage['stage']): void {
  if (!handoffChannel.hasSubscribers) return;
  const message: HandoffMessage = { kind: 'fair-lock', name, fingerprint: fingerprint(owner), token, stage };
  handoffChannel.publish(message);
}

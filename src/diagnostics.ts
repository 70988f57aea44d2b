/**
 * What holdfast tells `node:diagnostics_channel`: the channel names and the shape of every message, so that any
 * subscriber (the `holdfast/otel` bridge, a logger, a test) can see what the locks of this process do.
 *
 * | channel              | kind            | published                                                      | payload              |
 * |----------------------|-----------------|----------------------------------------------------------------|----------------------|
 * | `holdfast:acquire`   | tracing channel | around every `acquire()` / `tryAcquire()` of every primitive (Redis and ZooKeeper) | {@link AcquireContext} |
 * | `holdfast:release`   | tracing channel | around every first `release()` (or `await using` end)           | {@link ReleaseContext} |
 * | `holdfast:lost`      | channel         | when a held lease is lost (its `signal` aborts)                 | {@link LostMessage}  |
 * | `holdfast:renew`     | channel         | after each watchdog renewal and each `extend()`                 | {@link RenewMessage} |
 * | `holdfast:handoff`   | channel         | when a fair lock is handed to a waiter, and when it claims it   | {@link HandoffMessage} |
 * | `holdfast:election`  | channel         | when a candidate campaigns, is elected, loses or resigns        | {@link ElectionMessage} |
 *
 * The tracing channels follow Node's conventions (`tracing:holdfast:acquire:start`, `…:end`, `…:asyncStart`,
 * `…:asyncEnd`, `…:error`); the context object is the same across those events and is complete at `asyncEnd`.
 * Nothing is built when no one subscribes. Payloads never carry an owner id (whoever knows it can release the lock):
 * they carry its {@link fingerprint}, which is also what `holdfast dashboard` shows.
 *
 * @module
 */
import type { LockLostError, LockLostReason } from './errors.js';
import type { HeldKind } from './kinds.js';

/** The names of holdfast's diagnostics channels. */
export const CHANNELS = {
  /** Tracing channel around every acquisition: {@link AcquireContext}. */
  acquire: 'holdfast:acquire',
  /** Tracing channel around every release: {@link ReleaseContext}. */
  release: 'holdfast:release',
  /** A held lease was lost: {@link LostMessage}. */
  lost: 'holdfast:lost',
  /** A lease was renewed (or the renewal failed): {@link RenewMessage}. */
  renew: 'holdfast:renew',
  /** A fair lock changed hands through its queue: {@link HandoffMessage}. */
  handoff: 'holdfast:handoff',
  /** A leader election's candidate campaigned, was elected, lost or resigned: {@link ElectionMessage}. */
  election: 'holdfast:election',
} as const;

/**
 * Which primitive a message is about: a kind of the registry (src/kinds.ts), or a side of a read-write lock
 * (`read-lock`, `write-lock`). The `zk-` kinds are those of `holdfast/zookeeper`: its lock, the two sides of its
 * read-write lock, and its semaphore and its leader election.
 */
export type PrimitiveKind = HeldKind;

/** How an acquisition ended. `timed-out` also covers a `tryAcquire()` that found the resource busy. */
export type AcquireOutcome = 'acquired' | 'timed-out' | 'aborted' | 'error';

/** How a release ended. `not-held`: the hold had been lost before (`LockNotHeldError`); `failed`: Redis could not be reached (`ReleaseFailedError`). */
export type ReleaseOutcome = 'released' | 'not-held' | 'failed' | 'error';

/** The context of one acquisition on the `holdfast:acquire` tracing channel. */
export interface AcquireContext {
  /** A number unique in this process, repeated by the {@link ReleaseContext} of the same acquisition. */
  readonly id: number;
  /** Which primitive (see {@link PrimitiveKind}). */
  readonly kind: PrimitiveKind;
  /** The lock's name (a multi-lock's names joined with `+`). */
  readonly name: string;
  /** The owner's fingerprint: known at the start for an explicit `owner`, else once acquired. */
  fingerprint: string | undefined;
  /** The label of the holder's client (its `label` option), when it has one: never the owner id. */
  label?: string | undefined;
  /**
   * Attempts made so far: calls to Redis (a multi-lock counts one; its locks publish their own), or on ZooKeeper
   * looks at the queue (0 for a re-entry, which asks the server nothing).
   */
  attempts: number;
  /** ms from the call to its end (set at the end). */
  waitedMs: number;
  /** How it ended (set at the end). */
  outcome: AcquireOutcome | undefined;
  /** The fencing token of the hold, when acquired and the primitive mints one (0 where it has none). */
  token: number | undefined;
  /** The owner's hold count right after this acquisition (reentrant primitives). */
  holdCount: number | undefined;
  /** How many permits were taken (semaphores). */
  permits: number | undefined;
  /** Set by the tracing channel when the call threw: the error. */
  error?: unknown;
}

/** The context of one release on the `holdfast:release` tracing channel. */
export interface ReleaseContext {
  /** The {@link AcquireContext.id} of the acquisition released, when that acquisition was traced. */
  readonly id: number | undefined;
  /** Which primitive (see {@link PrimitiveKind}). */
  readonly kind: PrimitiveKind;
  /** The lock's (or semaphore's) name. */
  readonly name: string;
  /** The owner's fingerprint (see {@link fingerprint}), never the owner id. */
  readonly fingerprint: string | undefined;
  /** The label of the holder's client (its `label` option), when it has one: never the owner id. */
  readonly label?: string | undefined;
  /** The fencing token of the hold (0 where the primitive has none). */
  readonly token: number | undefined;
  /** ms from the acquisition to this release, when the acquisition was traced. */
  readonly heldMs: number | undefined;
  /** How it ended (set at the end). */
  outcome: ReleaseOutcome | undefined;
  /** Set by the tracing channel when the release threw: the error. */
  error?: unknown;
}

/** A message on `holdfast:lost`. */
export interface LostMessage {
  /** Which primitive (see {@link PrimitiveKind}). */
  readonly kind: PrimitiveKind;
  /** The lock's (or semaphore's) name. */
  readonly name: string;
  /** The owner's fingerprint (see {@link fingerprint}), never the owner id. */
  readonly fingerprint: string;
  /** The label of the holder's client (its `label` option), when it has one: never the owner id. */
  readonly label?: string | undefined;
  /** The fencing token of the hold (0 where the primitive has none). */
  readonly token: number;
  /** Why (the error's `reason`). */
  readonly reason: LockLostReason;
  /** The error the hold's `signal` aborted with. */
  readonly error: LockLostError;
}

/** A message on `holdfast:renew`. */
export interface RenewMessage {
  /** Which primitive (see {@link PrimitiveKind}). */
  readonly kind: PrimitiveKind;
  /** The lock's (or semaphore's) name. */
  readonly name: string;
  /** The owner's fingerprint (see {@link fingerprint}), never the owner id. */
  readonly fingerprint: string;
  /** The label of the holder's client (its `label` option), when it has one: never the owner id. */
  readonly label?: string | undefined;
  /** The fencing token of the hold (0 where the primitive has none). */
  readonly token: number;
  /** `watchdog`: the automatic renewal; `extend`: an explicit `extend(ms)`. */
  readonly source: 'watchdog' | 'extend';
  /** The lease asked for, in ms. */
  readonly leaseMs: number;
  /** `renewed`; `not-held`: Redis said the hold is gone; `error`: no answer (the watchdog tries again while the lease lasts). */
  readonly result: 'renewed' | 'not-held' | 'error';
  /** How long the renewal took, in ms. */
  readonly durationMs: number;
  /** The error, when `result` is `error`. */
  readonly error?: unknown;
}

/** A message on `holdfast:handoff`: a fair lock's release handed the lock to this waiter. */
export interface HandoffMessage {
  /** Which primitive (see {@link PrimitiveKind}). */
  readonly kind: 'fair-lock';
  /** The lock's (or semaphore's) name. */
  readonly name: string;
  /** The new holder's fingerprint. */
  readonly fingerprint: string;
  /** The label of the holder's client (its `label` option), when it has one: never the owner id. */
  readonly label?: string | undefined;
  /** The fencing token of the hold (0 where the primitive has none). */
  readonly token: number;
  /**
   * `granted`: the hand-off message reached the waiter, which holds the lock from then on; `claimed`: its claim (the
   * full lease) landed in Redis; `claim-failed`: the grant was gone or Redis could not be reached (the hold is lost).
   */
  readonly stage: 'granted' | 'claimed' | 'claim-failed';
}

/** A message on `holdfast:election`: one step of one candidate of a leader election. */
export interface ElectionMessage {
  /** `election` (Redis) or `zk-election` (ZooKeeper). */
  readonly kind: 'election' | 'zk-election';
  /** The election's name. */
  readonly name: string;
  /**
   * `campaign`: a candidate started to campaign (term 0); `elected`: it leads from now, with `term`; `lost`: its
   * leadership was lost (its signal aborted, `reason` says why); `resigned`: it stepped down.
   */
  readonly event: 'campaign' | 'elected' | 'lost' | 'resigned';
  /** The term (0 for `campaign`). */
  readonly term: number;
  /** The candidate's label. */
  readonly label: string;
  /** The candidate's owner fingerprint. */
  readonly fingerprint: string;
  /** Why leadership was lost (for `lost`). */
  readonly reason?: LockLostReason;
}

/**
 * The fingerprint of an owner id (or a permit id): the first 12 hex digits of its SHA-1. It names a holder in
 * diagnostics, in `readers()`, in `holdfast inspect`/`jobs` and in `holdfast dashboard` without giving away the id,
 * which is a release capability. The same id gives the same fingerprint in every process (and in Lua).
 */
export { fingerprint } from './internal/fingerprint.js';

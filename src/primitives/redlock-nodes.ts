/**
 * What the primitives over a {@link Redlock}'s nodes share with it: the options of an acquisition, its settings, and
 * what a lock or semaphore needs of the Redlock that made it. Kept apart from src/primitives/redlock.ts, which makes
 * them (and so imports src/primitives/redlock-semaphore.ts), so that the semaphore needs no import of it.
 *
 * @module
 */
import type { RedisTransport } from '../client.js';
import type { Closable } from '../core.js';
import type { LockLostError } from '../errors.js';
import type { LiveSet } from '../internal/live-set.js';
import type { QuorumHost } from '../internal/quorum.js';
import type { Keys } from '../keys.js';

/** Options of {@link RedlockLock.acquire}. */
export interface RedlockAcquireOptions {
  /**
   * Longest total wait, in ms, across attempts; `acquire()` also stops after `retryCount` retries, whichever is first.
   * @default no limit (only `retryCount` bounds the wait)
   */
  timeout?: number;
  /**
   * A fixed lease in ms: no watchdog; the lock is valid for `validity` ms after the acquisition returns.
   * @default undefined: the watchdog keeps `watchdogLease`, renewed by quorum every `watchdogInterval`
   */
  lease?: number;
  /** Aborts the wait: the promise rejects with `signal.reason`. */
  signal?: AbortSignal;
}

/** @internal A Redlock's checked settings. */
export interface RedlockSettings {
  nodeTimeout: number;
  retryCount: number;
  retryDelay: number;
  retryJitter: number;
  watchdogLease: number;
  watchdogInterval: number;
  releaseMarkerTtl: number;
}

/** The Redlock a Redlock semaphore runs on: its quorum and whether it is closed (a {@link Redlock} is one). */
export interface RedlockNodes extends QuorumHost {
  /** @internal */
  readonly nodes: readonly RedisTransport[];
  /** @internal */
  readonly keys: Keys;
  /** @internal */
  readonly settings: Readonly<RedlockSettings>;
  /** @internal */
  readonly holds: LiveSet<Closable>;
  /** @internal */
  newOwner(): string;
  /** @internal */
  listenerCount(event: 'lockLost'): number;
  /** @internal */
  emit(event: 'lockLost', error: LockLostError): boolean;
}

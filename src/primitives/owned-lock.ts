/**
 * The machinery every owner-held, leased, reentrant primitive shares (the read lock and the write lock of a
 * read-write lock): one {@link OwnedHold} per owner in this process with its {@link Lease} (watchdog or fixed) and
 * loss signal, `withLock` reentrancy through the async context, retry-safe releases, and `close()` support.
 * A subclass supplies the atomic operations (acquire attempt, renew, release).
 *
 * Internal: the public classes are {@link ReadLock}/{@link WriteLock} and their held objects.
 *
 * @module
 */
import type { Closable, Core } from '../core.js';
import { AcquireTimeoutError, LockNotHeldError, RedisConnectionError, type LockLostError } from '../errors.js';
import { now } from '../internal/clock.js';
import { Lease } from '../internal/lease.js';
import { checkKnownKeys, checkName, checkOptions, optDuration, optSignal } from '../internal/validate.js';
import { runHolding } from '../internal/scope.js';
import { waitFor } from '../internal/wait.js';
import type { AcquireOptions } from './lock.js';

const ACQUIRE_KEYS = ['timeout', 'lease', 'signal', 'owner'] as const;

/** What one acquire attempt found. */
export type OwnedAttempt = { acquired: true; token: number; holdCount: number } | { acquired: false; retryInMs: number };

/** @internal One owner's hold in this process, shared by its reentrant acquisitions. */
export class OwnedHold implements Closable {
  lease!: Lease;
  holds = 0;

  constructor(
    readonly lock: OwnedLock<HeldOwned>,
    readonly owner: string,
    readonly token: number,
  ) {}

  get active(): boolean {
    return this.holds > 0 && !this.lease.done;
  }

  async closeHold(): Promise<void> {
    this.lease.stop();
    try {
      await this.lock.releaseOnce(this.owner, this.lock.core.requestId(), true);
    } finally {
      this.lease.lose('client-closed');
    }
  }
}

/** One acquisition of an owned lock. Release it once (`release()` or `await using`); a second release does nothing. */
export class HeldOwned implements AsyncDisposable {
  #released: Promise<void> | undefined;

  /** @internal */
  constructor(
    /** @internal */
    readonly hold: OwnedHold,
    /** The owner's hold count in Redis right after this acquisition (1 = first hold). */
    readonly holdCount: number,
  ) {}

  /** The lock's name. */
  get name(): string {
    return this.hold.lock.name;
  }
  /** The owner id this lock is held under (pass it as `owner` to re-enter or downgrade from another place). */
  get owner(): string {
    return this.hold.owner;
  }
  /** Aborts, with a `LockLostError` as its reason, the moment the hold can no longer be counted on. */
  get signal(): AbortSignal {
    return this.hold.lease.signal;
  }
  /** True once the hold was lost (not when released). */
  get lost(): boolean {
    return this.hold.lease.lost;
  }
  /** True once this acquisition was released. */
  get released(): boolean {
    return this.#released !== undefined;
  }

  /**
   * Releases this acquisition (the lock frees when the owner's last hold is released). Idempotent; a retry after
   * a connection error reuses one request id, so it never reports a spurious "not held".
   * @throws {LockNotHeldError} when the hold was lost before the release
   */
  release(): Promise<void> {
    this.#released ??= this.hold.lock.releaseHold(this.hold);
    return this.#released;
  }

  /**
   * Sets the lease to `leaseMs` from now (for a fixed lease; watchdog holds renew themselves).
   * @throws {LockNotHeldError} when no longer held
   */
  async extend(leaseMs: number): Promise<void> {
    const lease = optDuration(leaseMs, 'leaseMs');
    if (lease === undefined) throw new TypeError('leaseMs must be a number of milliseconds, got undefined');
    if (this.released) throw new LockNotHeldError(this.name, `lock "${this.name}" was already released`);
    const sentAt = now();
    if (!(await this.hold.lock.renewOnce(this.owner, lease))) {
      this.hold.lease.lose('expired');
      throw new LockNotHeldError(this.name);
    }
    this.hold.lease.confirm(sentAt, lease);
  }

  /** Releases; never throws for a hold that was already lost or released. */
  async [Symbol.asyncDispose](): Promise<void> {
    try {
      await this.release();
    } catch (error) {
      if (!(error instanceof LockNotHeldError)) throw error;
    }
  }
}

/** What `withLock` hands its callback. */
export interface OwnedScope<H> {
  /** Aborts with a `LockLostError` if the hold is lost while the callback runs. */
  signal: AbortSignal;
  /** The held lock. */
  lock: H;
}

/** @internal The base of the read lock and the write lock. */
export abstract class OwnedLock<H extends HeldOwned> {
  readonly #holds = new Map<string, OwnedHold>();

  constructor(
    /** @internal */
    readonly core: Core,
    /** The lock's name. */
    readonly name: string,
  ) {}

  /** The async-context key under which a hold is inherited (shared by the read and the write lock of one name). */
  protected abstract get contextKey(): string;
  /** The channel waiters listen on. */
  protected abstract get channel(): string;
  /** One atomic acquire attempt. `waiting` = the caller will wait if busy. */
  protected abstract attemptOnce(owner: string, leaseMs: number, budgetMs: number, waiting: boolean): Promise<OwnedAttempt>;
  /** @internal Extends `owner`'s lease; false when it no longer holds. */
  abstract renewOnce(owner: string, leaseMs: number): Promise<boolean>;
  /** @internal Releases one hold (or all); returns holds left, or -1 when not held. */
  abstract releaseOnce(owner: string, requestId: string, all: boolean): Promise<number>;
  /** Wraps a hold in the public held object. */
  protected abstract wrap(hold: OwnedHold, holdCount: number): H;
  /** Called when a wait ends without the lock (timeout, abort, error). */
  protected giveUp(_owner: string): Promise<void> {
    return Promise.resolve();
  }

  /**
   * Waits for the lock and returns the held lock.
   * @throws {AcquireTimeoutError} when `timeout` passes first
   * @throws the signal's reason when `signal` aborts
   */
  async acquire(options?: AcquireOptions): Promise<H> {
    const held = await this.acquireWith(options, undefined);
    if (!held) throw new AcquireTimeoutError(this.name, 0); // `timeout: 0` and the single attempt found it taken
    return held;
  }

  /** One attempt (or a wait of at most `timeout` ms): the held lock, or `null` when busy. */
  tryAcquire(options?: AcquireOptions): Promise<H | null> {
    return this.acquireWith(options, 0);
  }

  /**
   * Runs `fn` while holding the lock and releases it afterwards, also when `fn` throws. Inside `fn` (its whole async
   * call chain) the read and the write lock of this name are acquired under the same owner: re-entry raises the hold
   * count, a read inside a write is a downgrade, a write inside a read is refused with `UpgradeRefusedError`.
   */
  async withLock<T>(fn: (scope: OwnedScope<H>) => Promise<T> | T, options?: AcquireOptions): Promise<T> {
    if (typeof fn !== 'function') throw new TypeError(`fn must be a function, got ${typeof fn}`);
    const held = await this.acquire(options);
    const hold = held.hold;
    return runHolding(this.core, this.contextKey, held, () => hold.active, () => fn({ signal: held.signal, lock: held }));
  }

  /** @internal */
  async acquireWith(options: AcquireOptions | undefined, defaultTimeout: number | undefined): Promise<H | null> {
    const opts = checkOptions<AcquireOptions>(options);
    checkKnownKeys(opts, ACQUIRE_KEYS);
    const timeout = optDuration(opts.timeout, 'options.timeout', 0) ?? defaultTimeout;
    const fixedLease = optDuration(opts.lease, 'options.lease');
    const signal = optSignal(opts.signal, 'options.signal');
    if (opts.owner !== undefined) checkName(opts.owner, 'options.owner');
    this.core.assertOpen();

    const core = this.core;
    const inherited = core.context.getStore()?.get(this.contextKey);
    const inheritedActive = inherited !== undefined && inherited.active();
    const fresh = opts.owner === undefined && !inheritedActive;
    const owner = opts.owner ?? (inherited && inheritedActive ? inherited.owner : core.newOwner());
    const leaseMs = fixedLease ?? core.settings.watchdogLease;
    const waiting = timeout !== 0;

    return waitFor(core, {
      name: this.name,
      channel: this.channel,
      timeout,
      signal,
      attempt: async (budget) => {
        const sentAt = now();
        let result: OwnedAttempt;
        try {
          result = await this.attemptOnce(owner, leaseMs, budget, waiting);
        } catch (error) {
          // The reply was lost: the lock may be ours in Redis. Undo a fresh owner's acquisition; its lease bounds it anyway.
          if (fresh && error instanceof RedisConnectionError) {
            this.releaseOnce(owner, core.requestId(), true).catch(() => {
              /* unreachable: the lease will expire */
            });
          }
          throw error;
        }
        if (result.acquired) return { done: true, value: this.#held(owner, result.token, result.holdCount, sentAt, leaseMs, fixedLease === undefined) };
        return { done: false, retryInMs: result.retryInMs };
      },
      onGiveUp: () => (waiting ? this.giveUp(owner) : Promise.resolve()),
    });
  }

  #held(owner: string, token: number, holdCount: number, sentAt: number, leaseMs: number, watchdog: boolean): H {
    let hold = this.#holds.get(owner);
    if (!hold || hold.lease.done) {
      const h = new OwnedHold(this, owner, token);
      hold = h;
      const core = this.core;
      h.lease = new Lease({
        name: this.name,
        leaseMs,
        renewEveryMs: watchdog ? core.settings.watchdogInterval : undefined,
        sentAt,
        renew: (ms) => this.renewOnce(owner, ms),
        onLost: (error: LockLostError) => {
          this.#forget(h);
          core.emitLost(error);
        },
      });
      this.#holds.set(owner, h);
      core.holds.add(h);
    } else {
      hold.lease.confirm(sentAt, leaseMs);
    }
    hold.holds++;
    return this.wrap(hold, holdCount);
  }

  #forget(hold: OwnedHold): void {
    if (this.#holds.get(hold.owner) === hold) this.#holds.delete(hold.owner);
    this.core.holds.delete(hold);
  }

  /** @internal Releases one hold with retries that reuse one request id. */
  async releaseHold(hold: OwnedHold): Promise<void> {
    const requestId = this.core.requestId();
    let left: number | undefined;
    for (let attempt = 1; ; attempt++) {
      try {
        left = await this.releaseOnce(hold.owner, requestId, false);
        break;
      } catch (error) {
        if (!(error instanceof RedisConnectionError) || attempt >= 3 || hold.lease.lost) throw error;
        await new Promise((r) => setTimeout(r, 25 * attempt));
      }
    }
    hold.holds = Math.max(0, hold.holds - 1);
    if (left < 0) {
      this.#forget(hold);
      if (!hold.lease.lost) hold.lease.lose('expired');
      throw new LockNotHeldError(this.name, `lock "${this.name}" was no longer held by this owner when released`);
    }
    if (left === 0 || hold.holds === 0) {
      hold.lease.stop();
      this.#forget(hold);
    }
  }
}

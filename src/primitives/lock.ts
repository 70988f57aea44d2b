/**
 * The reentrant lock: mutual exclusion on one Redis key with a lease, an owner token, a fencing
 * token, a watchdog, a loss signal and waiting on pub/sub.
 *
 * @module
 */
import type { Core } from '../core.js';
import { AcquireTimeoutError, LockNotHeldError, ReplicationNotReachedError } from '../errors.js';
import type { AcquireContext } from '../diagnostics.js';
import { acquireParams } from '../internal/acquire.js';
import { onRelease, waitUntilFree, waitUntilFreeParams, type ReleaseEvent, type WaitUntilFreeOptions } from '../internal/events.js';
import { now } from '../internal/clock.js';
import { HoldTable, LeasedHeld, markerOnDemand, type HoldOps } from '../internal/hold.js';
import { checkReplicaSync, waitReplicas, type ReplicaSync } from '../internal/replica-sync.js';
import { checkKnownKeys, checkName, checkOptions, optDuration } from '../internal/validate.js';
import { withHeld } from '../internal/scope.js';
import { traceAcquire } from '../internal/trace.js';
import { refusedWhileMigrating, retryAfterPttl, waitFor, type Attempt } from '../internal/wait.js';
import { scripts } from '../lua/scripts.gen.js';
import { mayHaveRun } from '../script.js';

/** Options of {@link Lock.acquire} and {@link Lock.tryAcquire}. */
export interface AcquireOptions {
  /**
   * How long to wait for the lock, in ms. `0` makes a single attempt.
   * @default no limit for `acquire()`; `0` for `tryAcquire()`
   */
  timeout?: number;
  /**
   * A fixed lease in ms: the lock expires then unless released or extended, and no watchdog renews it.
   * @default undefined: the watchdog keeps a `watchdogLease` lease renewed every `watchdogInterval`
   */
  lease?: number;
  /** Aborts the wait: the promise rejects with `signal.reason`. */
  signal?: AbortSignal;
  /**
   * An explicit owner id. Every acquisition with the same owner id, from any process, is the same owner (reentrant).
   * Use it to hand a lock over between processes. Keep it secret: whoever knows it can release the lock.
   * @default a fresh random id per acquisition (or the id this async call chain already holds the lock under)
   */
  owner?: string;
  /**
   * Wait for replicas after this acquisition (`WAIT`/`WAITAOF`); `false` turns the client's `replicaSync` off for it.
   * When not reached, the acquisition is released and `ReplicationNotReachedError` thrown.
   * @default the client's `replicaSync`
   */
  replicaSync?: ReplicaSync | false;
}

const ACQUIRE_KEYS = ['timeout', 'lease', 'signal', 'owner', 'replicaSync'] as const;

/** Options of `adopt(ownerId, options)` on a lock, a read or write lock, or a permit. */
export interface AdoptOptions {
  /**
   * A fixed lease in ms, set at once: the hold expires then unless released or extended, and no watchdog renews it.
   * @default undefined: the watchdog of this client takes over, keeping a `watchdogLease` lease renewed every `watchdogInterval`
   */
  lease?: number;
}

/** @internal */
export const ADOPT_KEYS = ['lease'] as const;

/** @internal Checks `adopt`'s arguments: the owner id and the lease (`undefined`: the watchdog). */
export function adoptParams(ownerId: unknown, options: unknown, what = 'ownerId'): { owner: string; lease: number | undefined } {
  const owner = checkName(ownerId, what);
  const opts = checkOptions<AdoptOptions>(options);
  checkKnownKeys(opts, ADOPT_KEYS);
  return { owner, lease: optDuration(opts.lease, 'options.lease') };
}

/*
 * A release reserves the freed lock for the longest-waiting waiter of another client for 50 ms (the `px 50` in
 * lua/lock/release-n.lua): the time it has to wake and ask. Only that waiter is woken; the waiters of other processes
 * are woken once the reservation has lapsed (RESERVED_WAKE_MS in internal/notifier.ts). Past it (the waiter died, or
 * is slow), any waiter may take the lock.
 */

/** `lock/acquire`'s mode digit: wait mode ('0' single attempt, '1' first attempt of a waiter, '2' later attempt) + 3 when the owner may hold the lock already. */
const ACQUIRE_MODES = [['0', '1', '2'], ['3', '4', '5']] as const;

/** The key names of one lock. */
interface LockNames {
  key: string;
  /** The acquire script's keys: lock, fencing counter, waiters. */
  keys: readonly string[];
  channel: string;
  waiters: string;
}

/** A point-in-time view of a lock in Redis. */
export interface LockInfo {
  /** The lock's name. */
  name: string;
  /** The owner id, or `null` when free. */
  owner: string | null;
  /** The hold count of the owner (0 when free). */
  holdCount: number;
  /** The fencing token of the current holder (0 when free). */
  token: number;
  /** ms until the lease runs out, or `null` when free. */
  remainingTtl: number | null;
  /** The last fencing token minted from this name's counter (shared with the other names of its Cluster slot): at least the token of every acquisition of this name so far. */
  lastToken: number;
}

/** What `withLock` hands the callback. */
export interface LockScope {
  /** Aborts with a `LockLostError` if the lock is lost while `fn` runs: pass it to your I/O. */
  signal: AbortSignal;
  /** The fencing token of this hold: send it with every write to a fenced resource. */
  token: number;
  /** The held lock itself. */
  lock: HeldLock;
}

/**
 * A held lock: one acquisition. Release it once (`release()` or `await using`); a second release does nothing.
 * `release()` rejects with `LockNotHeldError` when the lock was lost before it, and with `ReleaseFailedError` when
 * Redis could not be reached (the lock is then no longer renewed and frees within its lease; call it again to retry).
 */
export class HeldLock extends LeasedHeld {
  /** The fencing token: strictly greater than every token minted before for this name (not consecutive). */
  get token(): number {
    return this.hold.token;
  }
}

/**
 * A reentrant distributed lock, obtained from `holdfast.lock(name)`. The object is a cheap handle: ownership is
 * per acquisition (or per async call chain, see {@link Lock.withLock}), never per handle.
 */
export class Lock {
  readonly #ops: LockOps;
  readonly #table: HoldTable;

  /** @internal */
  constructor(
    /** @internal */
    readonly core: Core,
    /** The lock's name. */
    readonly name: string,
  ) {
    this.#ops = new LockOps(core, name);
    this.#table = new HoldTable(this.#ops, core);
  }

  /**
   * Waits for the lock and returns the held lock. Reentrant when called inside {@link Lock.withLock} for the same
   * name (same async call chain) or with the same explicit `owner`.
   * @throws {AcquireTimeoutError} when `timeout` passes first (never before: the last attempt is made at the deadline)
   * @throws {RedisConnectionError} when Redis does not answer within `commandTimeout`
   * @throws the signal's reason when `signal` aborts
   */
  acquire(options?: AcquireOptions): Promise<HeldLock> {
    return traceAcquire('lock', this.name, options, (trace) => this.#acquire(options, true, trace)) as Promise<HeldLock>;
  }

  /**
   * One attempt, or a wait of at most `timeout` ms: the held lock, or `null` when another owner still holds it when
   * the time is up.
   */
  tryAcquire(options?: AcquireOptions): Promise<HeldLock | null> {
    return traceAcquire('lock', this.name, options, (trace) => this.#acquire(options, false, trace));
  }

  /**
   * Runs `fn` while holding the lock and releases it afterwards, also when `fn` throws. Inside `fn` (its whole async
   * call chain) this lock is reentrant: nested `acquire()`/`withLock()` on the same name raise the hold count.
   */
  withLock<T>(fn: (scope: LockScope) => Promise<T> | T, options?: AcquireOptions): Promise<T> {
    return withHeld(this.core, this.#ops.names().key, fn, () => this.acquire(options), lockScope);
  }

  /** True when any owner holds the lock. */
  async isLocked(): Promise<boolean> {
    return (await this.inspect()).owner !== null;
  }

  /** ms until the current lease runs out, or `null` when the lock is free. */
  async remainingTtl(): Promise<number | null> {
    return (await this.inspect()).remainingTtl;
  }

  /** The current owner's hold count (0 when free). */
  async holdCount(): Promise<number> {
    return (await this.inspect()).holdCount;
  }

  /** Reads owner, hold count, token and remaining lease in one step. */
  async inspect(): Promise<LockInfo> {
    this.core.assertOpen();
    const reply = (await this.core.run(scripts['lock/inspect'], [this.core.keys.lock(this.name), this.core.keys.fence(this.name)], [])) as [
      string | null,
      number,
      number,
      number,
      number,
    ];
    const [owner, holdCount, token, pttl, lastToken] = reply;
    return { name: this.name, owner: owner ?? null, holdCount, token, remainingTtl: owner ? pttl : null, lastToken };
  }

  /**
   * Deletes the lock whoever holds it and wakes the waiters. The holder's signal aborts at its next renewal
   * (watchdog) or lease end. For operators: prefer letting leases expire.
   * @returns true if a lock was deleted
   */
  async forceUnlock(): Promise<boolean> {
    this.core.assertOpen();
    return (await this.core.run(scripts['lock/force-unlock'], [this.core.keys.lock(this.name)], [this.core.keys.channel(this.name)])) === 1;
  }

  /**
   * Takes over the hold of owner `ownerId` (a lock acquired with an explicit `owner`, by another process or by a
   * client that is gone): same hold in Redis, same fencing token, no second hold count. The lease is set at once
   * (the watchdog of this client, or `options.lease`), so renewal is taken over here; the adopter may `release()` it
   * (one hold count, as any acquisition: for a lock taken once, that frees it). A holder that still renews keeps
   * renewing the same key: stop it, or let it be gone. In a client that holds it already, this joins that hold (as a
   * re-entry that adds no hold count), whose lease goes on as it was.
   * @throws {LockNotHeldError} when `ownerId` does not hold the lock
   */
  async adopt(ownerId: string, options?: AdoptOptions): Promise<HeldLock> {
    const { owner, lease } = adoptParams(ownerId, options);
    this.core.assertOpen();
    const adopted = await this.#table.adopt(owner, lease ?? this.core.settings.watchdogLease, lease === undefined);
    if (!adopted) throw new LockNotHeldError(this.name, `lock "${this.name}" is not held by the owner to adopt`);
    return new HeldLock(adopted.hold, adopted.holdCount);
  }

  /**
   * Waits until the lock is free, without taking it. Resolves `true` once it is free or a release of it is heard (it
   * was free at that moment; someone may have taken it again since), `false` when `timeout` passes first. Woken by releases over pub/sub; an expiry publishes nothing,
   * so the wait sleeps at most the holder's remaining lease before looking again.
   * @throws the signal's reason when `signal` aborts
   */
  async waitUntilFree(options?: WaitUntilFreeOptions): Promise<boolean> {
    const { timeout, signal } = waitUntilFreeParams(options);
    this.core.assertOpen();
    return waitUntilFree(this.core, this.#ops.names().channel, async () => {
      const info = await this.inspect();
      // a lock a release reserved for a waiter (hold count 0) is held by nobody: free
      return info.owner === null || info.holdCount === 0 ? null : (info.remainingTtl ?? -1);
    }, timeout, signal);
  }

  /**
   * Calls `listener` each time the lock is released (its last hold) or force-unlocked, by any process, until the
   * returned function is called. Resolves once subscribed. An expiry publishes nothing and is not reported: use
   * {@link Lock.waitUntilFree} to learn that a lock became free whichever way.
   */
  onRelease(listener: (event: ReleaseEvent) => void): Promise<() => void> {
    return onRelease(this.core, this.name, this.#ops.names().channel, listener);
  }

  /** `required`: `acquire()` — no time limit by default, and the time running out is an {@link AcquireTimeoutError}. */
  async #acquire(options: AcquireOptions | undefined, required: boolean, trace: AcquireContext | undefined): Promise<HeldLock | null> {
    const core = this.core;
    const { key, keys, channel } = this.#ops.names();
    const p = acquireParams<AcquireOptions>(core, options, ACQUIRE_KEYS, required, key);
    const sync = p.options.replicaSync === undefined ? core.settings.replicaSync : checkReplicaSync(p.options.replicaSync, 'options.replicaSync');
    const { owner, fresh, leaseMs, timeout, signal } = p;
    if (p.ready) await p.ready;
    const watchdog = p.fixedLease === undefined;
    // An owner id minted for this call cannot hold the lock yet: the script takes its two-call path.
    const modes = ACQUIRE_MODES[fresh ? 0 : 1];
    const table = this.#table;

    // 0 a single attempt; 1 a first attempt that will wait (it joins the waiters if the lock is taken); 2 a waiter's
    // later attempt. The waiters let a release reserve the lock for the one that has waited longest.
    let waitMode: 0 | 1 | 2 = timeout === 0 ? 0 : 1;
    // when this waiter first found the lock taken (Redis ms): sent back with its later attempts, so that a waiter that
    // missed a reservation made for it keeps its place instead of going to the back
    let since: string | undefined;
    const attempt = (budget: number): Promise<Attempt<HeldLock>> => {
      const sentAt = now();
      const mode = modes[waitMode];
      if (waitMode === 1) waitMode = 2;
      return core.run(scripts['lock/acquire'], keys, since === undefined ? [owner, leaseMs, mode] : [owner, leaseMs, mode, since], budget).then(
        (raw): Attempt<HeldLock> => {
          // the common reply, a first hold's bare token, without the decoding
          if (typeof raw === 'number') return { done: true, value: new HeldLock(table.held(owner, raw, sentAt, leaseMs, watchdog), 1) };
          const reply = decodeAcquire(raw);
          if (reply.acquired) return { done: true, value: new HeldLock(table.held(owner, reply.token, sentAt, leaseMs, watchdog), reply.holdCount) };
          if (reply.since !== undefined) since ??= reply.since;
          return { done: false, retryInMs: retryAfterPttl(reply.pttl) };
        },
        (error: unknown) => {
          // The reply was lost: the lock may be ours in Redis. Undo a fresh owner's acquisition; its lease bounds it anyway.
          if (fresh && mayHaveRun(error)) this.#abandon(owner);
          throw error;
        },
      );
    };
    // The common case first, without the waiting machinery: one attempt, unless this process' own waiters queue
    // ahead of a fresh owner (see `politeFirst`).
    let first: Attempt<HeldLock> | undefined;
    const notifier = core.notifier;
    if (!(fresh && timeout !== 0 && notifier.busyFor(channel) > 0 && notifier.waiting(channel) > 0)) {
      signal?.throwIfAborted();
      if (trace) trace.attempts++;
      first = await attempt(core.settings.commandTimeout).catch((error: unknown) => refusedWhileMigrating<HeldLock>(error, timeout));
    }
    const held = first?.done
      ? first.value
      : first && timeout === 0
        ? null
        : await waitFor(core, {
            name: this.name,
            channel,
            tag: owner,
            politeFirst: fresh,
            timeout,
            signal,
            attempt,
            first,
            trace,
            // a waiter that gives up leaves the waiters, so no release reserves the lock for it
            onGiveUp: async () => {
              await core.run(scripts['lock/withdraw'], [this.#ops.names().waiters], [owner]);
            },
          });
    if (held && sync) await this.#syncReplicas(held, sync);
    if (!held && required) throw new AcquireTimeoutError(this.name, timeout ?? 0);
    return held;
  }

  /** WAIT for replicas; when not reached (or WAIT fails), roll the acquisition back and throw. */
  async #syncReplicas(held: HeldLock, sync: ReplicaSync): Promise<void> {
    let reached: number;
    try {
      reached = await waitReplicas(this.core, this.core.keys.lock(this.name), sync);
    } catch (error) {
      await held.release().catch(() => {});
      throw error;
    }
    if (reached < sync.replicas) {
      await held.release().catch(() => {
        /* the lease bounds a hold we could not release */
      });
      throw new ReplicationNotReachedError(this.name, sync.replicas, reached);
    }
  }

  #abandon(owner: string): void {
    this.#ops.releaseAll(owner).catch(() => {
      /* Redis is unreachable: the lease will expire */
    });
  }
}

/** The lock's scripts, as the hold engine calls them (one small object per handle, no closures). */
class LockOps implements HoldOps {
  readonly kind = 'lock';
  #names: LockNames | undefined;

  constructor(
    readonly core: Core,
    readonly name: string,
  ) {}

  /** Key names of this lock, built on first use. */
  names(): LockNames {
    if (this.#names) return this.#names;
    const k = this.core.keys;
    const key = k.lock(this.name);
    const waiters = k.lockWaiters(this.name);
    return (this.#names = { key, keys: [key, k.fence(this.name), waiters], channel: k.channel(this.name), waiters });
  }

  async renew(owner: string, leaseMs: number): Promise<boolean> {
    return (await this.core.run(scripts['lock/renew'], [this.names().key], [owner, leaseMs])) === 1;
  }

  /**
   * A release of one hold. The last hold of the owner here goes without a release marker (the common case: it frees
   * the lock, and a retry of a full release needs none); should holds remain after all (the owner id also holds the
   * lock elsewhere), the script changes nothing and asks for one (-2), and the request is sent again with it.
   */
  releaseRequest(owner: string, holdsHere = 1): (retry: boolean) => Promise<number> {
    const core = this.core;
    const { key, waiters } = this.names();
    return markerOnDemand(core, this.name, holdsHere, (mode, marker) =>
      marker === undefined
        ? (core.run(scripts['lock/release'], [key, waiters], [owner, mode]) as Promise<number>)
        : (core.run(scripts['lock/release'], [key, waiters, marker], [owner, mode, core.settings.releaseMarkerTtl]) as Promise<number>),
    );
  }

  /** Hold count and token of `owner` (for `adopt`); `null` when it holds nothing (a reservation for it is no hold). */
  async inspectOwner(owner: string): Promise<{ holdCount: number; token: number } | null> {
    const reply = (await this.core.run(scripts['lock/inspect'], [this.names().key, this.core.keys.fence(this.name)], [])) as [string | null, number, number];
    const [holder, holdCount, token] = reply;
    return holder === owner && holdCount > 0 ? { holdCount, token } : null;
  }

  releaseAll(owner: string): Promise<unknown> {
    const core = this.core;
    const { key, waiters } = this.names();
    // every hold at once: nothing remains, so no marker
    return core.run(scripts['lock/release'], [key, waiters], [owner, '1']);
  }

}

/** @internal The scope `withLock` hands its callback. */
export function lockScope(held: HeldLock): LockScope {
  return { signal: held.signal, token: held.token, lock: held };
}

/** @internal What the `lock/acquire` script answered. */
export type AcquireReply = { acquired: true; token: number; holdCount: number } | { acquired: false; pttl: number; since?: string | undefined };

/**
 * @internal Decodes a `lock/acquire` reply: a bare token for a first hold (the common, cheap reply),
 * `[1, token, holdCount]` for a re-entry, `[0, pttl]` when another owner holds the lock (`[0, pttl, since]` for a
 * waiter: when it first found the lock taken).
 */
export function decodeAcquire(reply: unknown): AcquireReply {
  if (!Array.isArray(reply)) return { acquired: true, token: Number(reply), holdCount: 1 };
  const [ok, a, b] = reply as [number, number, number | string | undefined];
  if (ok === 1) return { acquired: true, token: Number(a), holdCount: Number(b ?? 1) };
  return { acquired: false, pttl: Number(a ?? -2), since: b === undefined || b === null ? undefined : String(b) };
}

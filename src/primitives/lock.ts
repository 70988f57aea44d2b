/**
 * The reentrant lock: mutual exclusion on one Redis key with a lease, an owner token, a fencing
 * token, a watchdog, a loss signal and waiting on pub/sub.
 *
 * @module
 */
import type { Core } from '../core.js';
import type { Hold } from '../internal/hold.js';
import { LeasedHeld } from '../internal/hold.js';
import { OwnedLock, type Acquiring, type Acquisition, type FreeSpec, type PrimitiveSpec, type ReleaseMode } from '../internal/primitive.js';
import type { ReplicaSync } from '../internal/replica-sync.js';
import type { ReleaseEvent } from '../internal/events.js';
import { now } from '../internal/clock.js';
import { retryAfterPttl, type Attempt } from '../internal/wait.js';
import { scripts } from '../lua/scripts.gen.js';
import type { ReplyOf } from '../script.js';

export type { AdoptOptions } from '../internal/primitive.js';

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
export class Lock extends OwnedLock<HeldLock, LockScope, AcquireOptions> {
  /** @internal */
  constructor(core: Core, name: string) {
    super(core, name, new LockSpec(core, name), lockScope);
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
    const [owner, holdCount, token, pttl, lastToken] = await inspectLock(this.core, this.name);
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
   * Calls `listener` each time the lock is released (its last hold) or force-unlocked, by any process, until the
   * returned function is called. Resolves once subscribed. An expiry publishes nothing and is not reported: use
   * {@link Lock.waitUntilFree} to learn that a lock became free whichever way.
   */
  onRelease(listener: (event: ReleaseEvent) => void): Promise<() => void> {
    return this.template.onRelease(listener);
  }
}

/** `lock/inspect`'s reply: owner, hold count, token, ms left, last token minted. */
async function inspectLock(core: Core, name: string): Promise<[string | null, number, number, number, number]> {
  return await core.run(scripts['lock/inspect'], [core.keys.lock(name), core.keys.fence(name)], []);
}

/** The plain lock as its template runs it: one small object per handle, its key names built on first use. */
class LockSpec implements PrimitiveSpec<HeldLock>, FreeSpec {
  readonly kind = 'lock';
  readonly acquireKeys = ACQUIRE_KEYS;
  readonly tagged = true;
  readonly politeFirst = true;
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
  get contextKey(): string {
    return this.names().key;
  }
  get syncKey(): string {
    return this.names().key;
  }
  get channel(): string {
    return this.names().channel;
  }
  get free(): FreeSpec {
    return this;
  }
  get source(): string {
    return this.names().channel;
  }

  async renew(owner: string, leaseMs: number): Promise<boolean> {
    return (await this.core.run(scripts['lock/renew'], [this.names().key], [owner, leaseMs])) === 1;
  }

  release(owner: string, mode: ReleaseMode, marker: string | undefined): Promise<number> {
    const core = this.core;
    const { key, waiters } = this.names();
    return (
      marker === undefined
        ? core.run(scripts['lock/release'], [key, waiters], [owner, mode])
        : core.run(scripts['lock/release'], [key, waiters, marker], [owner, mode, core.settings.releaseMarkerTtl])
    );
  }

  /** Hold count and token of `owner` (for `adopt`); `null` when it holds nothing (a reservation for it is no hold). */
  async inspectOwner(owner: string): Promise<{ holdCount: number; token: number } | null> {
    const [holder, holdCount, token] = await inspectLock(this.core, this.name);
    return holder === owner && holdCount > 0 ? { holdCount, token } : null;
  }

  wrap(hold: Hold, holdCount: number): HeldLock {
    return new HeldLock(hold, holdCount);
  }

  async busyFor(): Promise<number | null> {
    const [owner, holdCount, , pttl] = await inspectLock(this.core, this.name);
    // a lock a release reserved for a waiter (hold count 0) is held by nobody: free
    return owner === null || owner === undefined || holdCount === 0 ? null : pttl;
  }

  start(a: Acquiring<HeldLock>): Acquisition<HeldLock> {
    return new LockAcquisition(this, a);
  }
}

/** One acquisition of a plain lock: its wait mode, and since when it waits. */
class LockAcquisition implements Acquisition<HeldLock> {
  /** `lock/acquire`'s mode digits for this owner (see `ACQUIRE_MODES`). */
  readonly #modes: (typeof ACQUIRE_MODES)[0 | 1];
  // 0 a single attempt; 1 a first attempt that will wait (it joins the waiters if the lock is taken); 2 a waiter's
  // later attempt. The waiters let a release reserve the lock for the one that has waited longest.
  #waitMode: 0 | 1 | 2;
  // when this waiter first found the lock taken (Redis ms): sent back with its later attempts, so that a waiter that
  // missed a reservation made for it keeps its place instead of going to the back
  #since: string | undefined;

  constructor(
    readonly spec: LockSpec,
    readonly a: Acquiring<HeldLock>,
  ) {
    // An owner id minted for this call cannot hold the lock yet: the script takes its two-call path.
    this.#modes = ACQUIRE_MODES[a.fresh ? 0 : 1];
    this.#waitMode = a.timeout === 0 ? 0 : 1;
  }

  attempt(budget: number): Promise<Attempt<HeldLock>> {
    const { a, spec } = this;
    const sentAt = now();
    const mode = this.#modes[this.#waitMode];
    if (this.#waitMode === 1) this.#waitMode = 2;
    const since = this.#since;
    const { owner, leaseMs } = a;
    return spec.core.run(scripts['lock/acquire'], spec.names().keys, since === undefined ? [owner, leaseMs, mode] : [owner, leaseMs, mode, since], budget).then((raw): Attempt<HeldLock> => {
      // the common reply, a first hold's bare token, without the decoding
      if (typeof raw === 'number') return { done: true, value: a.grant(raw, 1, sentAt) };
      const reply = decodeAcquire(raw);
      if (reply.acquired) return { done: true, value: a.grant(reply.token, reply.holdCount, sentAt) };
      if (reply.since !== undefined) this.#since ??= reply.since;
      return { done: false, retryInMs: retryAfterPttl(reply.pttl) };
    });
  }

  /** A waiter that gives up leaves the waiters, so no release reserves the lock for it. */
  async withdraw(): Promise<void> {
    await this.spec.core.run(scripts['lock/withdraw'], [this.spec.names().waiters], [this.a.owner]);
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
export function decodeAcquire(reply: ReplyOf<(typeof scripts)['lock/acquire']>): AcquireReply {
  if (!Array.isArray(reply)) return { acquired: true, token: Number(reply), holdCount: 1 };
  const [ok, a, b] = reply;
  if (ok === 1) return { acquired: true, token: Number(a), holdCount: Number(b ?? 1) };
  return { acquired: false, pttl: Number(a ?? -2), since: b === undefined || b === null ? undefined : String(b) };
}

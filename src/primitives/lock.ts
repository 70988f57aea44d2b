/**
 * The reentrant lock: mutual exclusion on one Redis key with a lease, an owner token, a fencing
 * token, a watchdog, a loss signal and waiting on pub/sub.
 *
 * @module
 */
import type { Closable, Core } from '../core.js';
import { AcquireTimeoutError, LockNotHeldError, type LockLostError, RedisConnectionError, ReplicationNotReachedError } from '../errors.js';
import { now } from '../internal/clock.js';
import { retryOnConnectionError } from '../internal/retry.js';
import { Lease } from '../internal/lease.js';
import { checkReplicaSync, waitReplicas, type ReplicaSync } from '../internal/replica-sync.js';
import { checkKnownKeys, checkName, checkOptions, optDuration, optSignal } from '../internal/validate.js';
import { runHolding } from '../internal/scope.js';
import { waitFor, type Attempt } from '../internal/wait.js';
import { scripts } from '../lua/scripts.gen.js';

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
const NO_OPTIONS: Partial<AcquireOptions> = Object.freeze({});

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
  /** The last fencing token minted for this name (0 if none ever was). */
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
 * @internal What a {@link Hold} needs from the primitive that made it: the plain {@link Lock} or the `FairLock`,
 * which share `Hold` and {@link HeldLock}.
 */
export interface HoldSource {
  /** @internal */
  readonly core: Core;
  readonly name: string;
  /** Releases one hold (see {@link Lock.releaseHold}). */
  releaseHold(hold: Hold): Promise<void>;
  /** Releases every hold of `owner` at once, best effort (client close, an acquisition whose reply was lost). */
  releaseAll(owner: string): Promise<unknown>;
  /** Sets `owner`'s lease to `leaseMs` from now: true if `owner` still holds the lock. */
  renew(owner: string, leaseMs: number): Promise<boolean>;
}

/** @internal One owner's hold of a lock in this process, shared by its reentrant acquisitions. */
export class Hold implements Closable {
  lease!: Lease;
  holds = 0;
  /** A claim of a fair-lock hand-off still on its way to Redis: re-entries and the release wait for it. */
  claim: Promise<void> | undefined;

  constructor(
    readonly lock: HoldSource,
    readonly owner: string,
    readonly token: number,
  ) {}

  get active(): boolean {
    return this.holds > 0 && !this.lease.done;
  }

  async closeHold(): Promise<void> {
    await this.claim;
    this.lease.stop();
    try {
      await this.lock.releaseAll(this.owner);
    } finally {
      this.lease.lose('client-closed');
    }
  }
}

/**
 * @internal The live holds of one lock handle, by owner: the first acquisition of an owner creates its hold and lease
 * (watchdog or fixed), re-entries share them. Used by every primitive whose held object is a {@link HeldLock}.
 */
export class HoldTable {
  readonly #holds = new Map<string, Hold>();

  constructor(private readonly source: HoldSource) {}

  /**
   * Records an acquisition confirmed by Redis for a request sent at `sentAt` and returns its held lock. `firstLeaseMs`:
   * Redis set a shorter first lease than `leaseMs` (see `LeaseOptions.firstLeaseMs`).
   */
  held(owner: string, token: number, holdCount: number, sentAt: number, leaseMs: number, watchdog: boolean, firstLeaseMs?: number): HeldLock {
    let hold = this.#holds.get(owner);
    if (!hold || hold.lease.done) {
      const created = new Hold(this.source, owner, token);
      const core = this.source.core;
      created.lease = new Lease({
        name: this.source.name,
        leaseMs,
        renewEveryMs: watchdog ? core.settings.watchdogInterval : undefined,
        sentAt,
        firstLeaseMs,
        renew: (ms) => this.source.renew(owner, ms),
        onLost: (error: LockLostError) => {
          this.forget(created);
          core.emitLost(error);
        },
      });
      this.#holds.set(owner, created);
      core.holds.add(created);
      hold = created;
    } else {
      hold.lease.confirm(sentAt, leaseMs);
    }
    hold.holds++;
    return new HeldLock(hold, holdCount);
  }

  /**
   * Releases one hold. `send(retry)` runs the primitive's release script once and returns the holds left, or -1 when
   * the owner no longer holds the lock; it is retried on connection errors (the script makes a retry return what the
   * first run did). Throws {@link LockNotHeldError} when the hold was lost before the release.
   */
  async release(hold: Hold, send: (retry: boolean) => Promise<number>, kind: string): Promise<void> {
    const heldWhenSent = !hold.lease.lost && now() < hold.lease.deadline;
    const transport = this.source.core.transport;
    const left = await retryOnConnectionError(
      async (n) => {
        const retry = n > 1;
        const epoch = transport.epoch?.();
        const reply = await send(retry);
        // A full release whose reply was lost leaves nothing to find: the lock is gone, as the first run left it. The
        // same holds for a reply that came across a reconnect, which may answer the client's own resent copy.
        return (retry || transport.epoch?.() !== epoch) && reply < 0 && heldWhenSent ? 0 : reply;
      },
      (n) => n < 3,
    );
    hold.holds = Math.max(0, hold.holds - 1);
    if (left < 0) {
      hold.lease.lose('expired'); // forgets the hold (onLost); a no-op when it was lost already
      this.forget(hold);
      const name = this.source.name;
      throw new LockNotHeldError(name, `${kind} "${name}" was no longer held by this owner when released (lost: ${describeLoss(hold)})`);
    }
    if (left === 0 || hold.holds === 0) {
      hold.lease.stop();
      this.forget(hold);
    }
  }

  /** The live hold of `owner` here, if any. */
  get(owner: string): Hold | undefined {
    return this.#holds.get(owner);
  }

  /** Drops a hold that was released or lost. */
  forget(hold: Hold): void {
    if (this.#holds.get(hold.owner) === hold) this.#holds.delete(hold.owner);
    this.source.core.holds.delete(hold);
  }
}

/**
 * A held lock: one acquisition. Release it once (`release()` or `await using`); a second release does nothing.
 */
export class HeldLock implements AsyncDisposable {
  #released: Promise<void> | undefined;

  /** @internal */
  constructor(
    /** @internal */
    readonly hold: Hold,
    /** The owner's hold count in Redis right after this acquisition (1 = first hold). */
    readonly holdCount: number,
  ) {}

  /** The lock's name. */
  get name(): string {
    return this.hold.lock.name;
  }
  /** The owner id this lock is held under. */
  get owner(): string {
    return this.hold.owner;
  }
  /** The fencing token: strictly greater than every token minted before for this name (not consecutive). */
  get token(): number {
    return this.hold.token;
  }
  /** Aborts, with a `LockLostError` as its reason, the moment the lock can no longer be counted on. */
  get signal(): AbortSignal {
    return this.hold.lease.signal;
  }
  /** True once the lock was lost (not when released). */
  get lost(): boolean {
    return this.hold.lease.lost;
  }
  /** True once this acquisition was released. */
  get released(): boolean {
    return this.#released !== undefined;
  }

  /**
   * Releases this acquisition (the lock frees when the owner's last hold is released; waiters are woken).
   * Idempotent: a second call returns the first call's promise. A retry after a connection error reuses the same
   * request id, so it reports what the first attempt did, never a spurious "not held".
   * @throws {LockNotHeldError} when the lock was lost before the release (expired, taken over, force-unlocked)
   */
  release(): Promise<void> {
    this.#released ??= this.hold.lock.releaseHold(this.hold);
    return this.#released;
  }

  /**
   * Sets the lease to `leaseMs` from now (a fixed-lease lock; watchdog locks renew themselves).
   * @throws {LockNotHeldError} when the lock is no longer held
   */
  async extend(leaseMs: number): Promise<void> {
    const lease = optDuration(leaseMs, 'leaseMs');
    if (lease === undefined) throw new TypeError('leaseMs must be a number of milliseconds, got undefined');
    if (this.released) throw new LockNotHeldError(this.name, `lock "${this.name}" was already released`);
    const sentAt = now();
    const ok = await this.hold.lock.renew(this.owner, lease);
    if (!ok) {
      this.hold.lease.lose('expired');
      throw new LockNotHeldError(this.name);
    }
    this.hold.lease.confirm(sentAt, lease, true);
  }

  /** Releases; never throws for a lock that was already lost or released. */
  async [Symbol.asyncDispose](): Promise<void> {
    try {
      await this.release();
    } catch (error) {
      if (!(error instanceof LockNotHeldError)) throw error;
    }
  }
}

/**
 * A reentrant distributed lock, obtained from `holdfast.lock(name)`. The object is a cheap handle: ownership is
 * per acquisition (or per async call chain, see {@link Lock.withLock}), never per handle.
 */
export class Lock implements HoldSource {
  /** @internal */
  constructor(
    /** @internal */
    readonly core: Core,
    /** The lock's name. */
    readonly name: string,
  ) {}

  /**
   * Waits for the lock and returns the held lock. Reentrant when called inside {@link Lock.withLock} for the same
   * name (same async call chain) or with the same explicit `owner`.
   * @throws {AcquireTimeoutError} when `timeout` passes first
   * @throws {RedisConnectionError} when Redis does not answer within `commandTimeout`
   * @throws the signal's reason when `signal` aborts
   */
  acquire(options?: AcquireOptions): Promise<HeldLock> {
    return this.#acquire(options, undefined, true) as Promise<HeldLock>;
  }

  /**
   * One attempt (or a wait of at most `timeout` ms): the held lock, or `null` when another owner holds it.
   */
  tryAcquire(options?: AcquireOptions): Promise<HeldLock | null> {
    return this.#acquire(options, 0, false);
  }

  /**
   * Runs `fn` while holding the lock and releases it afterwards, also when `fn` throws. Inside `fn` (its whole async
   * call chain) this lock is reentrant: nested `acquire()`/`withLock()` on the same name raise the hold count.
   */
  async withLock<T>(fn: (scope: LockScope) => Promise<T> | T, options?: AcquireOptions): Promise<T> {
    if (typeof fn !== 'function') throw new TypeError(`fn must be a function, got ${typeof fn}`);
    const held = await this.acquire(options);
    const hold = held.hold;
    return runHolding(this.core, this.core.keys.lock(this.name), held, () => hold.active, () => fn({ signal: held.signal, token: held.token, lock: held }));
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

  /** `required`: throw {@link AcquireTimeoutError} instead of resolving `null` when a single attempt finds it taken. */
  async #acquire(options: AcquireOptions | undefined, defaultTimeout: number | undefined, required: boolean): Promise<HeldLock | null> {
    const opts = options === undefined ? NO_OPTIONS : checkOptions<AcquireOptions>(options);
    if (opts !== NO_OPTIONS) checkKnownKeys(opts, ACQUIRE_KEYS);
    const timeout = optDuration(opts.timeout, 'options.timeout', 0) ?? defaultTimeout;
    const fixedLease = optDuration(opts.lease, 'options.lease');
    const signal = optSignal(opts.signal, 'options.signal');
    if (opts.owner !== undefined) checkName(opts.owner, 'options.owner');
    const sync = opts.replicaSync === undefined ? this.core.settings.replicaSync : checkReplicaSync(opts.replicaSync, 'options.replicaSync');
    this.core.assertOpen();

    const core = this.core;
    const { key, keys, channel } = this.#names();
    const inherited = core.context.getStore()?.get(key);
    const fresh = opts.owner === undefined && !(inherited && inherited.active());
    const owner = opts.owner ?? (inherited && inherited.active() ? inherited.owner : core.newOwner());
    const leaseMs = fixedLease ?? core.settings.watchdogLease;
    // An owner id minted for this call cannot hold the lock yet: the script takes its two-call path.
    const mayHold = fresh ? '0' : '1';

    const attempt = (budget: number): Promise<Attempt<HeldLock>> => {
      const sentAt = now();
      return core.run(scripts['lock/acquire'], keys, [owner, leaseMs, mayHold], budget).then(
        (raw): Attempt<HeldLock> => {
          // the common reply, a first hold's bare token, without the decoding
          if (typeof raw === 'number') return { done: true, value: this.#table.held(owner, raw, 1, sentAt, leaseMs, fixedLease === undefined) };
          const reply = decodeAcquire(raw);
          if (reply.acquired) {
            return { done: true, value: this.#table.held(owner, reply.token, reply.holdCount, sentAt, leaseMs, fixedLease === undefined) };
          }
          return { done: false, retryInMs: reply.pttl === -2 ? 0 : reply.pttl };
        },
        (error: unknown) => {
          // The reply was lost: the lock may be ours in Redis. Undo a fresh owner's acquisition; its lease bounds it anyway.
          if (fresh && error instanceof RedisConnectionError) this.#abandon(owner);
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
      first = await attempt(core.settings.commandTimeout);
    }
    const held = first?.done
      ? first.value
      : first && timeout === 0
        ? null
        : await waitFor(core, { name: this.name, channel, politeFirst: fresh, timeout, signal, attempt, first });
    if (held && sync) await this.#syncReplicas(held, sync);
    if (!held && required) throw new AcquireTimeoutError(this.name, 0); // `timeout: 0` and the single attempt found it taken
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

  readonly #table = new HoldTable(this);
  /** Key names of this lock, built on first use. */
  #keys: { key: string; keys: readonly string[]; channel: string } | undefined;

  #names(): { key: string; keys: readonly string[]; channel: string } {
    const k = this.core.keys;
    return (this.#keys ??= { key: k.lock(this.name), keys: [k.lock(this.name), k.fence(this.name)], channel: k.channel(this.name) });
  }

  #abandon(owner: string): void {
    this.releaseAll(owner).catch(() => {
      /* Redis is unreachable: the lease will expire */
    });
  }

  /** @internal */
  releaseAll(owner: string): Promise<unknown> {
    const core = this.core;
    return core.run(scripts['lock/release'], [core.keys.lock(this.name), core.keys.releaseMarker(this.name, core.requestId())], [
      owner,
      core.keys.channel(this.name),
      core.settings.releaseMarkerTtl,
      '1',
      '0',
    ]);
  }

  /** @internal */
  async renew(owner: string, leaseMs: number): Promise<boolean> {
    return (await this.core.run(scripts['lock/renew'], [this.core.keys.lock(this.name)], [owner, leaseMs])) === 1;
  }

  /** @internal Releases one hold with retries that reuse one request id. */
  releaseHold(hold: Hold): Promise<void> {
    const core = this.core;
    const { key, channel } = this.#names();
    const keys = [key, core.keys.releaseMarker(this.name, core.requestId())];
    return this.#table.release(
      hold,
      (retry) => core.run(scripts['lock/release'], keys, [hold.owner, channel, core.settings.releaseMarkerTtl, '0', retry ? '1' : '0']) as Promise<number>,
      'lock',
    );
  }

}

/** @internal What the `lock/acquire` script answered. */
export type AcquireReply = { acquired: true; token: number; holdCount: number } | { acquired: false; pttl: number };

/**
 * @internal Decodes a `lock/acquire` reply: a bare token for a first hold (the common, cheap reply),
 * `[1, token, holdCount]` for a re-entry, `[0, pttl]` when another owner holds the lock.
 */
export function decodeAcquire(reply: unknown): AcquireReply {
  if (!Array.isArray(reply)) return { acquired: true, token: Number(reply), holdCount: 1 };
  const [ok, a, b] = reply as [number, number, number | undefined];
  return ok === 1 ? { acquired: true, token: Number(a), holdCount: Number(b ?? 1) } : { acquired: false, pttl: Number(a ?? -2) };
}

function describeLoss(hold: Hold): string {
  const reason = hold.lease.signal.reason as LockLostError | undefined;
  return reason?.reason ?? 'expired';
}

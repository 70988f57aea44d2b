/**
 * The fair lock: a reentrant lock whose waiters queue in FIFO order across every process, and whose release
 * hands the lock straight to the head of the queue.
 *
 * How a hand-off works, and why it is O(1) however many wait:
 * - A waiter that finds the lock taken appends its owner id to a Redis list (the queue) and records which client it
 *   waits in (the client's channel). Each holdfast client subscribes once per fair lock name to its own channel.
 * - The release script pops the head of the queue and makes it the owner at once ("granted": hold count 0), mints its
 *   fencing token and publishes the token and owner id on that waiter's client channel only. The notifier routes the
 *   message to that one local waiter, which holds the lock from that moment (on a first lease it can prove: its own
 *   last queued attempt's send time + the alive time, which the grant outlives) and claims the grant in the
 *   background for its full lease. So a hand-off costs the release and one message, no extra round trip. Nobody else
 *   wakes; nobody can barge in between, because the lock is never free while someone alive waits.
 * - Liveness: each client with waiters sends one heartbeat per lock name every `waiterTimeout / 5` (one script call
 *   for all of its waiters) that keeps it "alive until" Redis time + 0.6 × `waiterTimeout`. Entries of a client whose
 *   alive time passed are dropped when they reach the head. A grant lives only as long as its client's alive time
 *   (at least `waiterTimeout / 5`), and any live client's heartbeat hands on a lock whose key expired. So a waiter
 *   that died silently costs the queue at most about 0.8 × `waiterTimeout`.
 * - A waiter that gives up (timeout, abort) leaves the queue; an unclaimed grant it had goes to the next waiter.
 *
 * @module
 */
import type { Core } from '../core.js';
import { AcquireTimeoutError, LockNotHeldError } from '../errors.js';
import { now } from '../internal/clock.js';
import { driftOf } from '../internal/lease.js';
import { retryOnConnectionError } from '../internal/retry.js';
import { checkDuration, checkKnownKeys, checkOptions } from '../internal/validate.js';
import { withHeld } from '../internal/scope.js';
import { retryAfterPttl, waitFor } from '../internal/wait.js';
import { scripts } from '../lua/scripts.gen.js';
import { mayHaveRun } from '../script.js';
import { acquireParams } from '../internal/acquire.js';
import { publishHandoff, traceAcquire } from '../internal/trace.js';
import type { AcquireContext } from '../diagnostics.js';
import { HoldTable, markerOnDemand, type Hold, type HoldOps } from '../internal/hold.js';
import { onRelease, waitUntilFree, waitUntilFreeParams, type EventSource, type ReleaseEvent, type WaitUntilFreeOptions } from '../internal/events.js';
import { adoptParams, HeldLock, lockScope, type AcquireOptions, type AdoptOptions, type LockInfo, type LockScope } from './lock.js';

/** Options of `holdfast.fairLock(name, options)`. */
export interface FairLockOptions {
  /**
   * The bound, in ms, on how long a waiter that dies silently (kill -9, a frozen process, a lost network) can hold
   * up the queue: its entry is skipped, and a hand-off it cannot claim passes on, within about 0.8 × this. Each
   * waiting client sends one heartbeat per lock name every `waiterTimeout / 5`. A client frozen longer than
   * 0.6 × this loses its waiters' places (they queue again at the tail when it resumes).
   * @default 5000
   */
  waiterTimeout?: number;
}

const FAIR_OPTION_KEYS = ['waiterTimeout'] as const;
const ACQUIRE_KEYS = ['timeout', 'lease', 'signal', 'owner'] as const;
/** At most this many waiters are listed by {@link FairLock.inspect}. */
const INSPECT_WAITERS = 1000;

/** A point-in-time view of a fair lock and its queue. */
export interface FairLockInfo extends LockInfo {
  /**
   * Entries in the queue, including entries of dead clients not yet dropped. While the lock has been handed to a
   * waiter that has not claimed it yet, `owner` is that waiter and `holdCount` is 0.
   */
  queueLength: number;
  /** Owner ids of the live waiters, head first (at most 1000). */
  waiters: string[];
}

/** The default `waiterTimeout`, in ms. */
const DEFAULT_WAITER_TIMEOUT = 5000;

/** Timing derived from `waiterTimeout`. */
interface FairTiming {
  /** How long a heartbeat keeps a client alive (Redis ms). */
  aliveMs: number;
  /** Heartbeat period. */
  beatMs: number;
  /** Least TTL of a grant. */
  grantFloorMs: number;
  /** TTL of the queue keys, refreshed by every heartbeat: abandoned queues vanish. */
  stateTtlMs: number;
  /** The three above as the acquire script takes them: `<aliveMs>:<grantFloorMs>:<stateTtlMs>`. */
  forScript: string;
}

function timingOf(waiterTimeout: number): FairTiming {
  const aliveMs = Math.ceil(waiterTimeout * 0.6);
  const grantFloorMs = Math.max(10, Math.floor(waiterTimeout / 5));
  const stateTtlMs = waiterTimeout * 2;
  return { aliveMs, beatMs: Math.max(10, Math.floor(waiterTimeout / 5)), grantFloorMs, stateTtlMs, forScript: `${aliveMs}:${grantFloorMs}:${stateTtlMs}` };
}

/** The timing of the default `waiterTimeout`, made once. */
const DEFAULT_TIMING = timingOf(DEFAULT_WAITER_TIMEOUT);

/**
 * The fair lock's scripts, as the hold engine calls them: one small object per handle. The release of an owner's last
 * hold here goes without a release marker (see `markerOnDemand`).
 */
class FairOps implements HoldOps {
  readonly kind = 'fair lock';

  constructor(readonly lock: FairLock) {}

  get name(): string {
    return this.lock.name;
  }

  async renew(owner: string, leaseMs: number): Promise<boolean> {
    const core = this.lock.core;
    return (await core.run(scripts['owned/renew'], [this.lock.keys()[0] as string], [owner, leaseMs])) === 1;
  }

  releaseRequest(owner: string, holdsHere = 1): (retry: boolean) => Promise<number> {
    return markerOnDemand(this.lock.core, this.name, holdsHere, (mode, marker) => this.lock.release(owner, mode, marker));
  }

  releaseAll(owner: string): Promise<unknown> {
    return this.lock.release(owner, '1', undefined); // every hold at once: nothing remains, so no marker
  }

  async inspectOwner(owner: string): Promise<{ holdCount: number; token: number } | null> {
    const info = await this.lock.inspect();
    // a hand-off not yet claimed (hold count 0) is the grantee's to claim, not a hold to adopt
    return info.owner === owner && info.holdCount > 0 ? { holdCount: info.holdCount, token: info.token } : null;
  }
}

/**
 * One client's heartbeat for its waiters on one fair lock name: a single script call per period, however many local
 * waiters there are. Runs only while some local waiter is queued.
 */
class Heartbeat {
  readonly #owners = new Map<string, number>();
  #timer: NodeJS.Timeout | undefined;
  #beating = false;

  constructor(
    private readonly lock: FairLock,
    private readonly channel: string,
    private readonly onIdle: () => void,
  ) {}

  join(owner: string): void {
    this.#owners.set(owner, (this.#owners.get(owner) ?? 0) + 1);
    if (!this.#timer) {
      this.#timer = setInterval(() => void this.#beat(), this.lock.timing.beatMs);
      this.#timer.unref();
    }
  }

  leave(owner: string): void {
    const n = (this.#owners.get(owner) ?? 0) - 1;
    if (n > 0) this.#owners.set(owner, n);
    else this.#owners.delete(owner);
    if (this.#owners.size === 0) {
      clearInterval(this.#timer);
      this.#timer = undefined;
      this.onIdle();
    }
  }

  async #beat(): Promise<void> {
    const lock = this.lock;
    const core = lock.core;
    if (this.#beating || core.closed) return;
    this.#beating = true;
    try {
      const t = lock.timing;
      const [stale, grantee] = (await core.run(scripts['fair-lock/heartbeat'], lock.keys(), [this.channel, t.aliveMs, t.grantFloorMs, t.stateTtlMs])) as [
        number,
        string | null,
      ];
      // This client had been counted dead: its waiters' entries may be gone, so each must try again (and re-queue).
      if (stale === 1) core.notifier.deliver(this.channel, 'a');
      if (grantee) {
        // A hand-off whose message was missed (subscriber reconnecting), or one to a waiter that has left: claim or pass
        // on. (A waiter holding from its message stays among the owners until its claim lands.)
        if (this.#owners.has(grantee)) core.notifier.deliver(this.channel, `=${grantee}`);
        else await lock.leaveQueue(grantee);
      }
    } catch {
      /* Redis unreachable: the next beat retries; the client's alive time covers a few missed beats */
    } finally {
      this.#beating = false;
    }
  }
}

const heartbeats = new WeakMap<Core, Map<string, Heartbeat>>();

/**
 * A fair (FIFO) reentrant distributed lock, obtained from `holdfast.fairLock(name)`. Same API as {@link Lock}:
 * reentrancy (async call chain or explicit owner), watchdog or fixed lease, loss signal, fencing token,
 * `await using`. A `FairLock` and a `Lock` of the same name are two different locks (they share the fencing counter).
 */
export class FairLock {
  /** @internal */
  readonly timing: FairTiming;
  readonly #table: HoldTable;

  /** @internal */
  constructor(
    /** @internal */
    readonly core: Core,
    /** The lock's name. */
    readonly name: string,
    options?: FairLockOptions,
  ) {
    const opts = checkOptions<FairLockOptions>(options);
    checkKnownKeys(opts, FAIR_OPTION_KEYS);
    this.waiterTimeout = checkDuration(opts.waiterTimeout ?? DEFAULT_WAITER_TIMEOUT, 'options.waiterTimeout', 100);
    this.timing = this.waiterTimeout === DEFAULT_WAITER_TIMEOUT ? DEFAULT_TIMING : timingOf(this.waiterTimeout);
    this.#table = new HoldTable(new FairOps(this), core);
  }

  /**
   * Takes over the hold of owner `ownerId` (acquired with an explicit `owner` by another process, or by a client that
   * is gone): same hold, same fencing token, no second hold count, renewal taken over here. See `Lock.adopt`.
   * @throws {LockNotHeldError} when `ownerId` does not hold the lock
   */
  async adopt(ownerId: string, options?: AdoptOptions): Promise<HeldLock> {
    const { owner, lease } = adoptParams(ownerId, options);
    this.core.assertOpen();
    const adopted = await this.#table.adopt(owner, lease ?? this.core.settings.watchdogLease, lease === undefined);
    if (!adopted) throw new LockNotHeldError(this.name, `fair lock "${this.name}" is not held by the owner to adopt`);
    return new HeldLock(adopted.hold, adopted.holdCount);
  }

  /** The bound on how long a dead waiter can hold up the queue, in ms. */
  readonly waiterTimeout: number;

  /** @internal The five keys every fair-lock script takes (lock, fence, queue, waiters, clients). */
  keys(): string[] {
    if (this.#keyNames) return this.#keyNames;
    const k = this.core.keys;
    return (this.#keyNames = [k.fairLock(this.name), k.fence(this.name), k.fairQueue(this.name), k.fairWaiters(this.name), k.fairClients(this.name)]);
  }
  #keyNames: string[] | undefined;

  /** This client's channel for this lock's hand-offs. */
  #channel(): string {
    return (this.#channelName ??= this.core.keys.fairChannel(this.name, this.core.clientId));
  }
  #channelName: string | undefined;


  /**
   * Waits for the lock in FIFO order and returns the held lock. Reentrant like {@link Lock.acquire}: a re-entry never
   * queues.
   * @throws {AcquireTimeoutError} when `timeout` passes first (the waiter has left the queue)
   * @throws {RedisConnectionError} when Redis does not answer within `commandTimeout`
   * @throws the signal's reason when `signal` aborts (the waiter has left the queue)
   */
  async acquire(options?: AcquireOptions): Promise<HeldLock> {
    return (await traceAcquire('fair-lock', this.name, options, (trace) => this.#acquire(options, true, trace))) as HeldLock;
  }

  /**
   * One attempt (or a wait of at most `timeout` ms): the held lock, or `null` when it is held or others are queued
   * for it when the time is up (a single attempt never jumps the queue, and never joins it).
   */
  tryAcquire(options?: AcquireOptions): Promise<HeldLock | null> {
    return traceAcquire('fair-lock', this.name, options, (trace) => this.#acquire(options, false, trace));
  }

  /** Runs `fn` while holding the lock, releases it afterwards, also when `fn` throws. Reentrant inside `fn`. */
  withLock<T>(fn: (scope: LockScope) => Promise<T> | T, options?: AcquireOptions): Promise<T> {
    return withHeld(this.core, this.keys()[0] as string, fn, () => this.acquire(options), lockScope);
  }

  /** True when any owner holds the lock (or it has been handed to a waiter that is claiming it). */
  async isLocked(): Promise<boolean> {
    return (await this.inspect()).owner !== null;
  }

  /** Reads owner, hold count, token, remaining lease and the queue in one step. */
  async inspect(): Promise<FairLockInfo> {
    this.core.assertOpen();
    const reply = (await this.core.run(scripts['fair-lock/inspect'], this.keys(), [INSPECT_WAITERS])) as [
      string | null,
      number,
      number,
      number,
      number,
      number,
      string[],
    ];
    const [owner, holdCount, token, pttl, lastToken, queueLength, waiters] = reply;
    return { name: this.name, owner: owner ?? null, holdCount, token, remainingTtl: owner ? pttl : null, lastToken, queueLength, waiters };
  }

  /**
   * Deletes the lock whoever holds it and hands it to the head of the queue. The holder's signal aborts at its next
   * renewal (watchdog) or lease end. For operators.
   * @returns true if a lock was deleted
   */
  async forceUnlock(): Promise<boolean> {
    this.core.assertOpen();
    const k = this.core.keys;
    return (await this.core.run(scripts['fair-lock/force-unlock'], [...this.keys(), k.fairObserved(this.name)], [this.timing.grantFloorMs, k.fairEvents(this.name)])) === 1;
  }

  /** Where this lock's releases are published while someone observes it. */
  #events(): EventSource {
    return { channel: this.core.keys.fairEvents(this.name), marker: this.core.keys.fairObserved(this.name) };
  }

  /**
   * Waits, without taking the lock or queueing, until nobody holds it or a release of it is heard (one that hands it
   * to the next waiter too) → `true`; `false` when `timeout` passes first. See `Lock.waitUntilFree`.
   * @throws the signal's reason when `signal` aborts
   */
  async waitUntilFree(options?: WaitUntilFreeOptions): Promise<boolean> {
    const { timeout, signal } = waitUntilFreeParams(options);
    this.core.assertOpen();
    return waitUntilFree(this.core, this.#events(), async () => {
      const info = await this.inspect();
      return info.owner === null ? null : (info.remainingTtl ?? -1);
    }, timeout, signal);
  }

  /** Calls `listener` for each release and force-unlock, by any process, until the returned function is called. See `Lock.onRelease`. */
  onRelease(listener: (event: ReleaseEvent) => void): Promise<() => void> {
    return onRelease(this.core, this.name, this.#events(), listener);
  }

  /** `required`: `acquire()` — no time limit by default, and the time running out is an {@link AcquireTimeoutError}. */
  async #acquire(options: AcquireOptions | undefined, required: boolean, trace: AcquireContext | undefined): Promise<HeldLock | null> {
    const core = this.core;
    const { owner, fresh, leaseMs, fixedLease, timeout, signal, ready } = acquireParams<AcquireOptions>(core, options, ACQUIRE_KEYS, required, this.keys()[0] as string);
    if (ready) await ready;
    const keys = this.keys();
    const channel = this.#channel();
    const t = this.timing;
    const enqueue = timeout === 0 ? '0' : '1';
    let heartbeat: Heartbeat | undefined;
    /** When this waiter's last attempt that left it queued was sent: the grant it waits for outlives that + aliveMs. */
    let queuedAt = -Infinity;
    /** Hand-off messages with a lower token were sent before this waiter's last attempt ran, which found them stale. */
    let staleBelow = 0;
    // A re-entry waits for a hand-off claim still in flight, so that Redis counts the holds in the order made here.
    if (!fresh) await this.#table.get(owner)?.claim;

    let held: HeldLock | null = null;
    try {
      held = await waitFor(core, {
        name: this.name,
        channel,
        tag: owner,
        listenFirst: true,
        timeout,
        signal,
        trace,
        attempt: async (budget) => {
          const sentAt = now();
          let reply: number[];
          try {
            reply = (await core.run(scripts['fair-lock/acquire'], keys, [owner, leaseMs, core.clientId, enqueue, t.forScript], budget)) as number[];
          } catch (error) {
            // The reply was lost: the lock may be ours in Redis. Undo a fresh owner's acquisition; its lease bounds it anyway.
            if (fresh && mayHaveRun(error)) this.#abandon(owner);
            throw error;
          }
          if (reply[0] === 1) {
            return { done: true, value: new HeldLock(this.#table.held(owner, reply[1] ?? 0, sentAt, leaseMs, fixedLease === undefined), reply[2] ?? 1) };
          }
          if (reply[2] === 1) queuedAt = sentAt;
          // A grant message already on its way was sent before this attempt ran, which found it gone: ignore it.
          staleBelow = Math.max(staleBelow, (reply[3] ?? 0) + 1);
          if (reply[2] === 1 && !heartbeat) {
            heartbeat = this.#heartbeat(channel);
            heartbeat.join(owner);
          }
          // Sleep until the hand-off message names us, or until the holder's lease (or an unclaimed grant) lapses: the
          // next attempt then hands the lock on at once. The heartbeat covers a lost message.
          return { done: false, retryInMs: retryAfterPttl(reply[1] ?? -1) };
        },
        onPayload: (payload) => {
          const token = Number(payload);
          return token >= staleBelow ? this.#handedOver(owner, token, queuedAt, leaseMs, fixedLease === undefined) : undefined;
        },
        onGiveUp: async () => {
          if (heartbeat) await this.leaveQueue(owner);
        },
      });
      if (!held && required) throw new AcquireTimeoutError(this.name, timeout ?? 0);
      return held;
    } finally {
      // A hand-off held from its message stays in the heartbeat until its claim lands: a heartbeat that saw the grant
      // still unclaimed must take it for this waiter's (and leave it be), not for a waiter gone (and pass it on).
      const claim = held?.hold.claim;
      const beat = heartbeat;
      if (beat && claim) void claim.finally(() => beat.leave(owner));
      else beat?.leave(owner);
    }
  }

  /**
   * The hand-off message named this waiter and its token: the lock is ours in Redis from the grant on, and the grant
   * lasts at least until the waiter's last queued attempt was sent + `aliveMs` (that attempt set the client's alive
   * time, which the grant's TTL covers; see includes/fair-advance.lua), and the claim, which sets the holder's lease
   * from a later moment, keeps it at least until that send + `leaseMs`. So the waiter holds the lock at once, on a
   * first lease of the shorter of the two from that send, without the claim's round trip; the claim (hold count 0 → 1, the full lease) follows in
   * the background and moves the deadline out. When too little of that first lease is left, it returns `undefined`
   * and the waiter claims first, as an attempt.
   */
  #handedOver(owner: string, token: number, queuedAt: number, leaseMs: number, watchdog: boolean): HeldLock | undefined {
    // Not longer than the holder's own lease either: the claim sets the key's TTL to that lease, from a later moment.
    const first = Math.min(this.timing.aliveMs, leaseMs);
    const left = queuedAt + first - driftOf(first) - now();
    if (!Number.isSafeInteger(token) || token < 1 || left < Math.max(20, first / 4)) return undefined;
    const hold = this.#table.held(owner, token, queuedAt, leaseMs, watchdog, first);
    const held = new HeldLock(hold, 1);
    publishHandoff(this.name, hold, 'granted');
    // Sent once the new holder's own code has run (its critical section is what the hand-off waits for); the
    // release and any re-entry wait for it, so Redis still sees the claim first.
    hold.claim = new Promise<void>((resolve) => setImmediate(resolve))
      .then(() => this.#claim(hold, leaseMs))
      .finally(() => {
        hold.claim = undefined;
      });
    return held;
  }

  /** Claims a grant already counted as held: confirms the full lease, or marks the hold lost if the grant is gone. */
  async #claim(hold: Hold, leaseMs: number): Promise<void> {
    const core = this.core;
    const t = this.timing;
    let sentAt = now();
    let reply: number[];
    try {
      // The claim may not have run: try again (it is idempotent) while the first lease lasts.
      reply = await retryOnConnectionError(
        async () => {
          sentAt = now();
          return (await core.run(scripts['fair-lock/acquire'], this.keys(), [hold.owner, leaseMs, core.clientId, '2', t.forScript])) as number[];
        },
        (n) => !hold.lease.done && now() + 25 * n < hold.lease.deadline,
      );
    } catch (error) {
      publishHandoff(this.name, hold, 'claim-failed');
      hold.lease.lose('connection', error); // forgets the hold (onLost)
      return;
    }
    const claimed = reply[0] === 1 && reply[1] === hold.token;
    publishHandoff(this.name, hold, claimed ? 'claimed' : 'claim-failed');
    if (claimed) hold.lease.confirm(sentAt, leaseMs);
    else hold.lease.lose('taken-over');
  }

  #heartbeat(channel: string): Heartbeat {
    let byName = heartbeats.get(this.core);
    if (!byName) {
      byName = new Map();
      heartbeats.set(this.core, byName);
    }
    const id = `${this.name}\0${this.waiterTimeout}`;
    let beat = byName.get(id);
    if (!beat) {
      const map = byName;
      const created = new Heartbeat(this, channel, () => {
        if (map.get(id) === created) map.delete(id);
      });
      beat = created;
      map.set(id, created);
    }
    return beat;
  }

  /** @internal Takes `owner` out of the queue; passes on a grant it has not claimed. */
  async leaveQueue(owner: string): Promise<void> {
    await this.core.run(scripts['fair-lock/leave'], this.keys(), [owner, this.timing.grantFloorMs]);
  }

  #abandon(owner: string): void {
    Promise.allSettled([this.#table.ops.releaseAll(owner), this.leaveQueue(owner)]).catch(() => {
      /* never rejects */
    });
  }

  /** @internal The release script's keys without a marker: the five of {@link FairLock.keys}, then the events marker. */
  releaseKeys(): string[] {
    return (this.#releaseKeyNames ??= [...this.keys(), this.core.keys.fairObserved(this.name)]);
  }
  #releaseKeyNames: string[] | undefined;

  /** @internal One run of the release script; `mode`: all + 2 × retry. */
  release(owner: string, mode: string, marker: string | undefined): Promise<number> {
    const core = this.core;
    const grantFloor = this.timing.grantFloorMs;
    return core.run(
      scripts['fair-lock/release'],
      marker === undefined ? this.releaseKeys() : [...this.releaseKeys(), marker],
      marker === undefined ? [owner, mode, grantFloor] : [owner, mode, grantFloor, core.settings.releaseMarkerTtl],
    ) as Promise<number>;
  }
}

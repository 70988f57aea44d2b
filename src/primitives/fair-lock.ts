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
import { now } from '../internal/clock.js';
import { driftOf } from '../internal/lease.js';
import { retryOnConnectionError } from '../internal/retry.js';
import { checkDuration, checkKnownKeys, checkOptions } from '../internal/validate.js';
import { retryAfterPttl, type Attempt } from '../internal/wait.js';
import { scripts } from '../lua/scripts.gen.js';
import { publishHandoff } from '../internal/trace.js';
import type { Hold } from '../internal/hold.js';
import type { EventSource, ReleaseEvent } from '../internal/events.js';
import { OwnedLock, type Acquiring, type Acquisition, type FreeSpec, type PrimitiveSpec, type ReleaseMode } from '../internal/primitive.js';
import { HeldLock, lockScope, type AcquireOptions, type LockInfo, type LockScope } from './lock.js';

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
const ACQUIRE_KEYS = ['timeout', 'lease', 'signal', 'owner', 'replicaSync'] as const;
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
 * One client's heartbeat for its waiters on one fair lock name: a single script call per period, however many local
 * waiters there are. Runs only while some local waiter is queued.
 */
class Heartbeat {
  readonly #owners = new Map<string, number>();
  #timer: NodeJS.Timeout | undefined;
  #beating = false;

  constructor(
    private readonly lock: FairSpec,
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
      const [stale, grantee] = await core.run(scripts['fair-lock/heartbeat'], lock.keys(), [this.channel, t.aliveMs, t.grantFloorMs, t.stateTtlMs]);
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
 * `acquire()` waits in FIFO order, and a re-entry never queues; `tryAcquire()` never jumps the queue, and a single
 * attempt never joins it. A waiter that times out or is aborted has left the queue.
 */
export class FairLock extends OwnedLock<HeldLock, LockScope, AcquireOptions> {
  /** The bound on how long a dead waiter can hold up the queue, in ms. */
  readonly waiterTimeout: number;
  readonly #spec: FairSpec;

  /** @internal */
  constructor(core: Core, name: string, options?: FairLockOptions) {
    const spec = new FairSpec(core, name, waiterTimeoutOf(options));
    super(core, name, spec, lockScope);
    this.#spec = spec;
    this.waiterTimeout = spec.waiterTimeout;
  }

  /** True when any owner holds the lock (or it has been handed to a waiter that is claiming it). */
  async isLocked(): Promise<boolean> {
    return (await this.inspect()).owner !== null;
  }

  /** Reads owner, hold count, token, remaining lease and the queue in one step. */
  async inspect(): Promise<FairLockInfo> {
    this.core.assertOpen();
    return this.#spec.inspect();
  }

  /**
   * Deletes the lock whoever holds it and hands it to the head of the queue. The holder's signal aborts at its next
   * renewal (watchdog) or lease end. For operators.
   * @returns true if a lock was deleted
   */
  async forceUnlock(): Promise<boolean> {
    this.core.assertOpen();
    const k = this.core.keys;
    const spec = this.#spec;
    return (await this.core.run(scripts['fair-lock/force-unlock'], [...spec.keys(), k.fairObserved(this.name)], [spec.timing.grantFloorMs, k.fairEvents(this.name)])) === 1;
  }

  /** Calls `listener` for each release and force-unlock, by any process, until the returned function is called. See `Lock.onRelease`. */
  onRelease(listener: (event: ReleaseEvent) => void): Promise<() => void> {
    return this.template.onRelease(listener);
  }
}

/** Checks a fair lock's options: its `waiterTimeout`. */
function waiterTimeoutOf(options: unknown): number {
  const opts = checkOptions<FairLockOptions>(options);
  checkKnownKeys(opts, FAIR_OPTION_KEYS);
  return checkDuration(opts.waiterTimeout ?? DEFAULT_WAITER_TIMEOUT, 'options.waiterTimeout', 100);
}

/** The fair lock as its template runs it: one small object per handle, its key names built on first use. */
class FairSpec implements PrimitiveSpec<HeldLock>, FreeSpec {
  readonly kind = 'fair-lock';
  readonly acquireKeys = ACQUIRE_KEYS;
  readonly tagged = true;
  readonly listenFirst = true;
  readonly timing: FairTiming;

  constructor(
    readonly core: Core,
    readonly name: string,
    readonly waiterTimeout: number,
  ) {
    this.timing = waiterTimeout === DEFAULT_WAITER_TIMEOUT ? DEFAULT_TIMING : timingOf(waiterTimeout);
  }

  /** The five keys every fair-lock script takes (lock, fence, queue, waiters, clients). */
  keys(): string[] {
    if (this.#keyNames) return this.#keyNames;
    const k = this.core.keys;
    return (this.#keyNames = [k.fairLock(this.name), k.fence(this.name), k.fairQueue(this.name), k.fairWaiters(this.name), k.fairClients(this.name)]);
  }
  #keyNames: string[] | undefined;

  get contextKey(): string {
    return this.keys()[0] as string;
  }
  get syncKey(): string {
    return this.keys()[0] as string;
  }
  /** This client's channel for this lock's hand-offs. */
  get channel(): string {
    return (this.#channelName ??= this.core.keys.fairChannel(this.name, this.core.clientId));
  }
  #channelName: string | undefined;

  get free(): FreeSpec {
    return this;
  }
  /** Where this lock's releases are published while someone observes it. */
  get source(): EventSource {
    return { channel: this.core.keys.fairEvents(this.name), marker: this.core.keys.fairObserved(this.name) };
  }
  async busyFor(): Promise<number | null> {
    const info = await this.inspect();
    return info.owner === null ? null : (info.remainingTtl ?? -1);
  }

  async inspect(): Promise<FairLockInfo> {
    const reply = await this.core.run(scripts['fair-lock/inspect'], this.keys(), [INSPECT_WAITERS]);
    const [owner, holdCount, token, pttl, lastToken, queueLength, waiters] = reply;
    return { name: this.name, owner: owner ?? null, holdCount, token, remainingTtl: owner ? pttl : null, lastToken, queueLength, waiters };
  }

  async renew(owner: string, leaseMs: number): Promise<boolean> {
    return (await this.core.run(scripts['owned/renew'], [this.keys()[0] as string], [owner, leaseMs])) === 1;
  }

  /** One run of the release script: its keys are the five of {@link FairSpec.keys}, then the events marker. */
  release(owner: string, mode: ReleaseMode, marker: string | undefined): Promise<number> {
    const core = this.core;
    const keys = (this.#releaseKeyNames ??= [...this.keys(), core.keys.fairObserved(this.name)]);
    const grantFloor = this.timing.grantFloorMs;
    return core.run(
      scripts['fair-lock/release'],
      marker === undefined ? keys : [...keys, marker],
      marker === undefined ? [owner, mode, grantFloor] : [owner, mode, grantFloor, core.settings.releaseMarkerTtl],
    );
  }
  #releaseKeyNames: string[] | undefined;

  async inspectOwner(owner: string): Promise<{ holdCount: number; token: number } | null> {
    const info = await this.inspect();
    // a hand-off not yet claimed (hold count 0) is the grantee's to claim, not a hold to adopt
    return info.owner === owner && info.holdCount > 0 ? { holdCount: info.holdCount, token: info.token } : null;
  }

  wrap(hold: Hold, holdCount: number): HeldLock {
    return new HeldLock(hold, holdCount);
  }

  start(a: Acquiring<HeldLock>): Acquisition<HeldLock> {
    return new FairAcquisition(this, a);
  }

  /** Takes `owner` out of the queue; passes on a grant it has not claimed. */
  async leaveQueue(owner: string): Promise<void> {
    await this.core.run(scripts['fair-lock/leave'], this.keys(), [owner, this.timing.grantFloorMs]);
  }

  /** This client's heartbeat for this lock's waiters (one per name and `waiterTimeout`). */
  heartbeat(): Heartbeat {
    let byName = heartbeats.get(this.core);
    if (!byName) {
      byName = new Map();
      heartbeats.set(this.core, byName);
    }
    const id = `${this.name}\0${this.waiterTimeout}`;
    let beat = byName.get(id);
    if (!beat) {
      const map = byName;
      const created = new Heartbeat(this, this.channel, () => {
        if (map.get(id) === created) map.delete(id);
      });
      beat = created;
      map.set(id, created);
    }
    return beat;
  }

  /** Claims a grant already counted as held: confirms the full lease, or marks the hold lost if the grant is gone. */
  async claim(hold: Hold, leaseMs: number): Promise<void> {
    const core = this.core;
    const t = this.timing;
    let sentAt = now();
    let reply: number[];
    try {
      // The claim may not have run: try again (it is idempotent) while the first lease lasts.
      reply = await retryOnConnectionError(
        async () => {
          sentAt = now();
          return await core.run(scripts['fair-lock/acquire'], this.keys(), [hold.owner, leaseMs, core.clientId, '2', t.forScript]);
        },
        (_n, pauseMs) => hold.validAt(now() + pauseMs),
      );
    } catch (error) {
      publishHandoff(this.name, hold, 'claim-failed');
      hold.loseClaim('connection', error); // forgets the hold (onLost)
      return;
    }
    const claimed = reply[0] === 1 && reply[1] === hold.token;
    publishHandoff(this.name, hold, claimed ? 'claimed' : 'claim-failed');
    if (claimed) hold.confirmClaim(sentAt, leaseMs);
    else hold.loseClaim('taken-over');
  }
}

/** One acquisition of a fair lock: its place in the queue, its heartbeat, and the hand-off it waits for. */
class FairAcquisition implements Acquisition<HeldLock> {
  readonly #enqueue: '0' | '1';
  #heartbeat: Heartbeat | undefined;
  /** When this waiter's last attempt that left it queued was sent: the grant it waits for outlives that + aliveMs. */
  #queuedAt = -Infinity;
  /** Hand-off messages with a lower token were sent before this waiter's last attempt ran, which found them stale. */
  #staleBelow = 0;

  constructor(
    readonly spec: FairSpec,
    readonly a: Acquiring<HeldLock>,
  ) {
    this.#enqueue = a.timeout === 0 ? '0' : '1';
  }

  async attempt(budget: number): Promise<Attempt<HeldLock>> {
    const { spec, a } = this;
    const sentAt = now();
    const reply = await spec.core.run(scripts['fair-lock/acquire'], spec.keys(), [a.owner, a.leaseMs, spec.core.clientId, this.#enqueue, spec.timing.forScript], budget);
    if (reply[0] === 1) return { done: true, value: a.grant(reply[1] ?? 0, reply[2] ?? 1, sentAt) };
    if (reply[2] === 1) this.#queuedAt = sentAt;
    // A grant message already on its way was sent before this attempt ran, which found it gone: ignore it.
    this.#staleBelow = Math.max(this.#staleBelow, (reply[3] ?? 0) + 1);
    if (reply[2] === 1 && !this.#heartbeat) {
      this.#heartbeat = spec.heartbeat();
      this.#heartbeat.join(a.owner);
    }
    // Sleep until the hand-off message names us, or until the holder's lease (or an unclaimed grant) lapses: the
    // next attempt then hands the lock on at once. The heartbeat covers a lost message.
    return { done: false, retryInMs: retryAfterPttl(reply[1] ?? -1) };
  }

  /** The reply was lost: the lock may be ours in Redis, or this owner queued. */
  undo(): void {
    if (!this.a.fresh) return;
    const owner = this.a.owner;
    Promise.allSettled([this.a.table.ops.releaseAll(owner), this.spec.leaveQueue(owner)]).catch(() => {
      /* never rejects */
    });
  }

  onPayload(payload: string): HeldLock | undefined {
    const token = Number(payload);
    return token >= this.#staleBelow ? this.#handedOver(token) : undefined;
  }

  async withdraw(): Promise<void> {
    if (this.#heartbeat) await this.spec.leaveQueue(this.a.owner);
  }

  done(held: HeldLock | null): void {
    // A hand-off held from its message stays in the heartbeat until its claim lands: a heartbeat that saw the grant
    // still unclaimed must take it for this waiter's (and leave it be), not for a waiter gone (and pass it on).
    const beat = this.#heartbeat;
    if (!beat) return;
    const owner = this.a.owner;
    const claim = held ? this.a.table.claimOf(owner) : undefined;
    if (claim) void claim.finally(() => beat.leave(owner));
    else beat.leave(owner);
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
  #handedOver(token: number): HeldLock | undefined {
    const { spec, a } = this;
    const leaseMs = a.leaseMs;
    // Not longer than the holder's own lease either: the claim sets the key's TTL to that lease, from a later moment.
    const first = Math.min(spec.timing.aliveMs, leaseMs);
    const left = this.#queuedAt + first - driftOf(first) - now();
    if (!Number.isSafeInteger(token) || token < 1 || left < Math.max(20, first / 4)) return undefined;
    const held = a.grant(token, 1, this.#queuedAt, undefined, first);
    const hold = held.hold;
    publishHandoff(spec.name, hold, 'granted');
    // Sent once the new holder's own code has run (its critical section is what the hand-off waits for); the
    // release and any re-entry wait for it, so Redis still sees the claim first.
    hold.startClaim(() => spec.claim(hold, leaseMs));
    return held;
  }
}

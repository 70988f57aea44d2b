/**
 * The permit-expirable semaphore: each acquisition is a lease with a random id, kept in a zset by expiry
 * (Redis time). Every operation first reclaims expired leases, so the permits of a process that died come back
 * within their lease. A permit without an explicit lease is kept alive by the watchdog, like a lock; any process
 * that knows a permit's id may release or extend it. A permit taken with `persist: true` has no lease at all: it
 * persists until released (by id, from anywhere), also when its holder dies.
 *
 * The semaphore itself persists, unless given a TTL (`trySetPermits(n, { ttl })`, `expire(ttl)`): its three keys then
 * go together, with every permit in them. Zero permits is refused (`RangeError`): a permit id for nothing would be
 * meaningless.
 *
 * @module
 */
import { randomBytes } from 'node:crypto';
import type { Core } from '../core.js';
import { LockNotHeldError } from '../errors.js';
import { now } from '../internal/clock.js';
import type { HeldFacts } from '../internal/trace.js';
import { LeasedHeld, type Hold } from '../internal/hold.js';
import { Template, type Acquiring, type Acquisition, type AdoptOptions, type PrimitiveSpec, type ReleaseMode } from '../internal/primitive.js';
import type { ReplicaSync } from '../internal/replica-sync.js';
import { checkDuration, checkInt, checkKnownKeys, checkName, checkOptions, optBoolean, optDuration } from '../internal/validate.js';
import type { Attempt } from '../internal/wait.js';
import { scripts } from '../lua/scripts.gen.js';
import { checkPermitDelta, checkPermits, MAX_PERMITS, SEMAPHORE_RECHECK_MS } from './semaphore.js';

/** Options of {@link PermitExpirableSemaphore.acquire}. */
export interface PermitAcquireOptions {
  /**
   * How long to wait for the permits, in ms. `0` makes a single attempt.
   * @default no limit for `acquire()`; `0` for `tryAcquire()`
   */
  timeout?: number;
  /**
   * A fixed lease in ms: the permits come back then unless released or extended; no watchdog.
   * @default undefined: the watchdog keeps a `watchdogLease` lease renewed every `watchdogInterval`
   */
  lease?: number;
  /** Aborts the wait: the promise rejects with `signal.reason`. */
  signal?: AbortSignal;
  /**
   * No lease at all: the permit persists until released (by its id, from any process), even when its holder dies,
   * and no watchdog runs. Not with `lease`. `extend(ms)` gives it a lease.
   * @default false
   */
  persist?: boolean;
  /**
   * Wait for replicas after this acquisition (`WAIT`/`WAITAOF`); `false` turns the client's `replicaSync` off for it.
   * When not reached, the permits are given back and `ReplicationNotReachedError` thrown.
   * @default the client's `replicaSync`
   */
  replicaSync?: ReplicaSync | false;
}

const ACQUIRE_KEYS = ['timeout', 'lease', 'signal', 'persist', 'replicaSync'] as const;

/** Options of {@link PermitExpirableSemaphore.trySetPermits}. */
export interface PermitSemaphoreSetOptions {
  /**
   * A TTL for the semaphore itself, in ms: it is deleted then with every permit in it (see {@link PermitExpirableSemaphore.expire}).
   * @default undefined: the semaphore persists until deleted
   */
  ttl?: number;
}

const SET_KEYS = ['ttl'] as const;

/** A permit id: 32 hex characters. */
const ID_PATTERN = /^[0-9a-f]{32}$/;

function checkPermitId(value: unknown): string {
  const id = checkName(value, 'permitId');
  if (!ID_PATTERN.test(id)) throw new RangeError('permitId must be a permit id as returned by acquire() (32 hex characters)');
  return id;
}

/** A counted view of the semaphore. */
export interface PermitSemaphoreInfo {
  /** The semaphore's name. */
  name: string;
  /** Free permits. */
  available: number;
  /** Permits held by live leases. */
  acquired: number;
  /** Number of live leases (permit ids). */
  leases: number;
}

/**
 * One acquisition: `permits` permits under one lease with an `id`. Release it once (`release()` or `await using`).
 * `release()` rejects with `LockNotHeldError` when the lease had expired before it, and with `ReleaseFailedError`
 * when Redis could not be reached (the lease is then no longer renewed and runs out; call it again to retry).
 */
export class Permit extends LeasedHeld {
  /** @internal */
  constructor(
    hold: Hold,
    /** The semaphore this permit belongs to. */
    readonly semaphore: PermitExpirableSemaphore,
    /** How many permits this lease holds. */
    readonly permits: number,
  ) {
    super(hold, 1);
  }

  /** The permit id: release or extend it by id from anywhere (keep it secret). */
  get id(): string {
    return this.hold.owner;
  }

  /** Released already by id from this client (`release(id)`, `releaseMany`): not held, and not lost either. */
  protected override releaseOnce(): Promise<void> {
    if (this.hold.settled) {
      return Promise.reject(new LockNotHeldError(this.name, `permit ${this.id} of "${this.name}" was already released by id`));
    }
    return super.releaseOnce();
  }

  /** @internal */
  override diagnostics(): HeldFacts {
    return { ...super.diagnostics(), holdCount: undefined, permits: this.permits };
  }
}

/** Most permits one `acquireEach` or `releaseMany` call handles (the ids travel as script arguments). */
export const MAX_PERMIT_IDS = 1000;

/**
 * A semaphore whose permits are leases, from `holdfast.permitExpirableSemaphore(name)`.
 *
 * @example
 * ```ts
 * const slots = holdfast.permitExpirableSemaphore('gpu');
 * await slots.trySetPermits(4);
 * await using permit = await slots.acquire(1, { timeout: 30_000 });
 * await train({ signal: permit.signal });
 * ```
 */
export class PermitExpirableSemaphore {
  readonly #t: Template<Permit>;

  /** @internal */
  constructor(
    /** @internal */
    readonly core: Core,
    /** The semaphore's name. */
    readonly name: string,
  ) {
    this.#t = new Template(core, name, new PermitSpec(this));
  }

  /** @internal */
  get keys(): string[] {
    const k = this.core.keys;
    return [k.permits(this.name), k.permitLeases(this.name), k.permitWeights(this.name)];
  }
  /** @internal */
  get channel(): string {
    return this.core.keys.permitsChannel(this.name);
  }

  /**
   * Sets the number of free permits if the semaphore does not exist yet, optionally with a TTL of its own.
   * @returns true when set
   */
  async trySetPermits(permits: number, options?: PermitSemaphoreSetOptions): Promise<boolean> {
    const n = checkInt(permits, 'permits', 0, MAX_PERMITS);
    const opts = checkOptions<PermitSemaphoreSetOptions>(options);
    checkKnownKeys(opts, SET_KEYS);
    const ttl = optDuration(opts.ttl, 'options.ttl');
    this.core.assertOpen();
    const reply = await this.core.run(scripts['psem/add'], this.keys, [n, this.channel, 'nx', ttl ?? 0]);
    return reply[0] === 1;
  }

  /**
   * Sets the total number of permits (free + held by live leases), whether or not the semaphore exists (Redisson's
   * `setPermits`): the free count becomes `permits − held`, below zero while more are held than the new total (held
   * permits are never taken back; they return to a smaller pool). Keeps the semaphore's TTL, if it has one.
   * @returns the free permits now
   */
  async setPermits(permits: number): Promise<number> {
    const n = checkInt(permits, 'permits', 0, MAX_PERMITS);
    this.core.assertOpen();
    return await this.core.run(scripts['psem/set'], this.keys, [n, this.channel]);
  }

  /**
   * Gives the semaphore a TTL of its own, in ms: it is deleted then with every permit in it (holders' signals abort
   * at their next renewal or lease end). Permits taken later share it.
   * @returns false when the semaphore does not exist (nothing done)
   */
  async expire(ttl: number): Promise<boolean> {
    const ms = checkDuration(ttl, 'ttl');
    this.core.assertOpen();
    return (await this.core.run(scripts['psem/expire'], this.keys, [ms])) === 1;
  }

  /** Takes the semaphore's own TTL away: it persists again. @returns false when it does not exist */
  async persist(): Promise<boolean> {
    this.core.assertOpen();
    return (await this.core.run(scripts['psem/expire'], this.keys, ['0'])) === 1;
  }

  /** ms until the semaphore itself expires, or `null` when it has no TTL of its own (or does not exist). */
  async remainingTtl(): Promise<number | null> {
    this.core.assertOpen();
    const pttl = await this.core.run(scripts['psem/pttl'], [this.core.keys.permits(this.name)], []);
    return pttl < 0 ? null : pttl;
  }

  /** Adds free permits (negative removes them). @returns the free permits after */
  async addPermits(permits: number): Promise<number> {
    const n = checkPermitDelta(permits);
    this.core.assertOpen();
    const reply = await this.core.run(scripts['psem/add'], this.keys, [n, this.channel, 'add', 0]);
    return reply[1] ?? 0;
  }

  /** Free permits now (after reclaiming expired leases). */
  async availablePermits(): Promise<number> {
    return (await this.inspect()).available;
  }

  /** Permits held by live leases. */
  async acquiredPermits(): Promise<number> {
    return (await this.inspect()).acquired;
  }

  /** Free and held permits, and live leases, in one step (expired leases are reclaimed first). */
  async inspect(): Promise<PermitSemaphoreInfo> {
    this.core.assertOpen();
    const [available, acquired, leases] = await this.core.run(scripts['psem/state'], this.keys, [this.channel, '']);
    return { name: this.name, available: available ?? 0, acquired: acquired ?? 0, leases: leases ?? 0 };
  }

  /** ms left on the lease of permit `permitId`, `Infinity` for a permit without a lease, or `null` when it is not held. */
  async remainingLease(permitId: string): Promise<number | null> {
    const id = checkPermitId(permitId);
    this.core.assertOpen();
    const reply = await this.core.run(scripts['psem/state'], this.keys, [this.channel, id]);
    const left = reply[3] ?? -2;
    return left === -3 ? Infinity : left < 0 ? null : left;
  }

  /**
   * Waits until `permits` are free and takes them as one lease.
   * @param permits how many @default 1
   * @throws {AcquireTimeoutError} when `timeout` passes first
   */
  async acquire(permits = 1, options?: PermitAcquireOptions): Promise<Permit> {
    return (await this.#t.acquire(options, true, (a) => new PermitAcquisition<Permit>(this, a, permits, false))) as Permit;
  }

  /** One attempt (or a wait of at most `timeout` ms): the permit, or `null` when not enough are free. */
  tryAcquire(permits = 1, options?: PermitAcquireOptions): Promise<Permit | null> {
    return this.#t.acquire(options, false, (a) => new PermitAcquisition<Permit>(this, a, permits, false));
  }

  /** Runs `fn` holding `permits` permits and gives them back afterwards. `fn` gets the permit (its `signal`). */
  withPermit<T>(fn: (permit: Permit) => Promise<T> | T, permits = 1, options?: PermitAcquireOptions): Promise<T> {
    return this.#t.withLock(fn, () => this.acquire(permits, options), (permit) => permit);
  }

  /**
   * Takes `permits` permits, one per lease, each with its own id (Redisson's `acquire(n)` that returns n ids): all or
   * none, at once. Release them one by one (`permit.release()`), by id, or several at once with
   * {@link PermitExpirableSemaphore.releaseMany}. Each has its own lease (and watchdog, without `lease`).
   * @param permits how many, at most {@link MAX_PERMIT_IDS}
   * @throws {AcquireTimeoutError} when `timeout` passes first
   */
  async acquireEach(permits: number, options?: PermitAcquireOptions): Promise<Permit[]> {
    return (await this.#t.acquire(options, true, (a) => new PermitAcquisition<Permit[]>(this, a, permits, true))) as Permit[];
  }

  /** One attempt (or a wait of at most `timeout` ms) of {@link PermitExpirableSemaphore.acquireEach}: the permits, or `null`. */
  tryAcquireEach(permits: number, options?: PermitAcquireOptions): Promise<Permit[] | null> {
    return this.#t.acquire(options, false, (a) => new PermitAcquisition<Permit[]>(this, a, permits, true));
  }

  /**
   * Releases several permits (ids or `Permit`s) all or nothing: when one is not held, none is released.
   * @throws {LockNotHeldError} when one of them is not held (released, expired or unknown); nothing was released
   */
  async releaseMany(permits: readonly (string | Permit)[]): Promise<void> {
    const ids = this.#ids(permits);
    this.core.assertOpen();
    const [released] = await this.core.run(scripts['psem/release-many'], this.keys, ['all', this.channel, ...ids]);
    if ((released ?? 0) < 0) {
      throw new LockNotHeldError(this.name, `${-(released ?? 0)} of ${ids.length} permits of "${this.name}" are not held: none was released`);
    }
    for (const id of ids) this.#settleLocal(id);
  }

  /** Releases every one of several permits (ids or `Permit`s) that is held. @returns how many were released */
  async tryReleaseMany(permits: readonly (string | Permit)[]): Promise<number> {
    const ids = this.#ids(permits);
    this.core.assertOpen();
    const [released] = await this.core.run(scripts['psem/release-many'], this.keys, ['any', this.channel, ...ids]);
    for (const id of ids) this.#settleLocal(id);
    return released ?? 0;
  }

  /**
   * Takes over permit `permitId` (taken by another process, or by a client that is gone): same lease id and permits,
   * renewal taken over here (this client's watchdog, or `options.lease` set at once); the adopter may release it.
   * @throws {LockNotHeldError} when no such permit is held
   */
  async adopt(permitId: string, options?: AdoptOptions): Promise<Permit> {
    return this.#t.adopt(checkPermitId(permitId), options, 'permitId');
  }

  #ids(permits: unknown): string[] {
    if (!Array.isArray(permits)) throw new TypeError('permits must be an array of permit ids or Permit objects');
    if (permits.length === 0 || permits.length > MAX_PERMIT_IDS) throw new RangeError(`permits must hold 1 to ${MAX_PERMIT_IDS} permits, got ${permits.length}`);
    const ids = permits.map((p: unknown) => (p instanceof Permit ? p.id : checkPermitId(p)));
    if (new Set(ids).size !== ids.length) throw new RangeError('permits must not name the same permit twice');
    return ids;
  }

  /** A permit of this client released by id: its watchdog stops, and its `release()` has nothing left to do. */
  #settleLocal(id: string): void {
    this.#t.table.settle(id);
  }

  /**
   * Releases permit `permitId` (from any process).
   * @throws {LockNotHeldError} when no such permit is held (released, expired or unknown)
   */
  async release(permitId: string): Promise<void> {
    if (!(await this.tryRelease(permitId))) {
      throw new LockNotHeldError(this.name, `permit ${String(permitId)} of "${this.name}" is not held`);
    }
  }

  /** Releases permit `permitId`. @returns false when no such permit is held */
  async tryRelease(permitId: string): Promise<boolean> {
    const id = checkPermitId(permitId);
    this.core.assertOpen();
    const released = (await this.releaseById(id)) > 0;
    this.#settleLocal(id);
    return released;
  }

  /** Sets permit `permitId`'s lease to `leaseMs` from now. @returns false when no such permit is held */
  async extend(permitId: string, leaseMs: number): Promise<boolean> {
    const id = checkPermitId(permitId);
    const lease = optDuration(leaseMs, 'leaseMs');
    if (lease === undefined) throw new TypeError('leaseMs must be a number of milliseconds, got undefined');
    this.core.assertOpen();
    return this.renewById(id, lease);
  }

  /** @internal Returns the permits given back (0 = not held). */
  async releaseById(id: string): Promise<number> {
    return await this.core.run(scripts['psem/release'], this.keys, [id, this.channel]);
  }

  /** @internal */
  async renewById(id: string, leaseMs: number): Promise<boolean> {
    return (await this.core.run(scripts['psem/renew'], this.keys, [id, leaseMs, this.channel])) === 1;
  }
}

/** Expirable permits as their template runs them: each permit is a hold whose owner is its id. */
class PermitSpec implements PrimitiveSpec<Permit> {
  readonly kind = 'permit-semaphore';
  readonly acquireKeys = ACQUIRE_KEYS;
  readonly contextKey = undefined;

  constructor(readonly semaphore: PermitExpirableSemaphore) {}

  get channel(): string {
    return this.semaphore.channel;
  }
  get syncKey(): string {
    return this.semaphore.keys[0] as string;
  }
  renew(id: string, leaseMs: number): Promise<boolean> {
    return this.semaphore.renewById(id, leaseMs);
  }
  /** A permit is released whole: 0 permits back means it was not held (-1 for the engine). */
  async release(id: string, _mode: ReleaseMode, _marker: string | undefined): Promise<number> {
    return (await this.semaphore.releaseById(id)) > 0 ? 0 : -1;
  }
  async inspectOwner(id: string): Promise<{ holdCount: number; token: number } | null> {
    const sem = this.semaphore;
    const reply = await sem.core.run(scripts['psem/state'], sem.keys, [sem.channel, id]);
    const weight = reply[4] ?? 0;
    return weight > 0 ? { holdCount: weight, token: 0 } : null;
  }
  /** `permits`: how many the hold holds. */
  wrap(hold: Hold, permits: number): Permit {
    return new Permit(hold, this.semaphore, permits);
  }
  start(a: Acquiring<Permit>): Acquisition<Permit> {
    return new PermitAcquisition(this.semaphore, a, 1, false);
  }
}

/** One acquisition of permits: `permits` under one id, or (`each`) one id per permit. */
class PermitAcquisition<R extends Permit | Permit[]> implements Acquisition<R> {
  readonly #n: number;
  readonly #leaseArg: number | 'inf';
  /** The ids of the last attempt (given back when its reply was lost). */
  #ids: string[] = [];

  constructor(
    readonly semaphore: PermitExpirableSemaphore,
    readonly a: Acquiring<Permit>,
    permits: unknown,
    readonly each: boolean,
  ) {
    this.#n = each ? checkInt(permits, 'permits', 1, MAX_PERMIT_IDS) : checkPermits(permits);
    const persist = optBoolean((a.options as PermitAcquireOptions).persist, 'options.persist') ?? false;
    if (persist && a.fixedLease !== undefined) throw new TypeError('options.persist and options.lease exclude each other: a permit that persists has no lease');
    if (persist) {
      a.leaseMs = Infinity;
      a.watchdog = false;
    }
    this.#leaseArg = persist ? 'inf' : a.leaseMs;
  }

  async attempt(budget: number): Promise<Attempt<R>> {
    const { semaphore: sem, a, each } = this;
    const n = this.#n;
    const ids = (this.#ids = Array.from({ length: each ? n : 1 }, () => randomBytes(16).toString('hex')));
    const sentAt = now();
    const reply = each
      ? await sem.core.run(scripts['psem/acquire-each'], sem.keys, [this.#leaseArg, sem.channel, ...ids], budget)
      : await sem.core.run(scripts['psem/acquire'], sem.keys, [ids[0] as string, n, this.#leaseArg, sem.channel], budget);
    if (reply[0] === 1) {
      // one grant for every id: judged once, and undone for all when it came too late (see `HoldTable.heldEach`)
      const taken = a.grantEach(ids, 0, each ? 1 : n, sentAt);
      return { done: true, value: (each ? taken : taken[0]) as R };
    }
    const hint = reply[1] ?? -1;
    return { done: false, retryInMs: hint < 0 ? SEMAPHORE_RECHECK_MS : Math.min(hint, SEMAPHORE_RECHECK_MS) };
  }

  /** The reply was lost: the permits may be ours in Redis. Give them back; their lease bounds them anyway. */
  undo(): void {
    const sem = this.semaphore;
    sem.core.run(scripts['psem/release-many'], sem.keys, ['any', sem.channel, ...this.#ids]).catch(() => {});
  }
}

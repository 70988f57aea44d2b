/**
 * The permit-expirable semaphore: each acquisition is a lease with a random id, kept in a zset by expiry
 * (Redis time). Every operation first reclaims expired leases, so the permits of a process that died come back
 * within their lease. A permit without an explicit lease is kept alive by the watchdog, like a lock; any process
 * that knows a permit's id may release or extend it.
 *
 * @module
 */
import { randomBytes } from 'node:crypto';
import type { Core } from '../core.js';
import { AcquireTimeoutError, LockNotHeldError, RedisConnectionError } from '../errors.js';
import { now } from '../internal/clock.js';
import { traceAcquire, type HeldFacts } from '../internal/trace.js';
import type { AcquireContext } from '../diagnostics.js';
import { HoldTable, LeasedHeld, type Hold } from '../internal/hold.js';
import { checkInt, checkKnownKeys, checkName, checkOptions, optDuration, optSignal } from '../internal/validate.js';
import { waitFor } from '../internal/wait.js';
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
}

const ACQUIRE_KEYS = ['timeout', 'lease', 'signal'] as const;

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

  /** @internal */
  override diagnostics(): HeldFacts {
    return { ...super.diagnostics(), holdCount: undefined, permits: this.permits };
  }
}

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
  readonly #table: HoldTable;

  /** @internal */
  constructor(
    /** @internal */
    readonly core: Core,
    /** The semaphore's name. */
    readonly name: string,
  ) {
    this.#table = new HoldTable(
      {
        name,
        kind: 'permit',
        renew: (id, leaseMs) => this.#renewById(id, leaseMs),
        // a permit is released whole: 0 permits back means it was not held (-1 for the engine)
        releaseRequest: (id) => async () => ((await this.#releaseById(id)) > 0 ? 0 : -1),
        releaseAll: (id) => this.#releaseById(id),
      },
      core,
    );
  }

  get #keys(): string[] {
    const k = this.core.keys;
    return [k.permits(this.name), k.permitLeases(this.name), k.permitWeights(this.name)];
  }
  get #channel(): string {
    return this.core.keys.permitsChannel(this.name);
  }

  /** Sets the number of free permits if the semaphore does not exist yet. @returns true when set */
  async trySetPermits(permits: number): Promise<boolean> {
    const n = checkInt(permits, 'permits', 0, MAX_PERMITS);
    this.core.assertOpen();
    const reply = (await this.core.run(scripts['psem/add'], this.#keys, [n, this.#channel, 'nx'])) as number[];
    return reply[0] === 1;
  }

  /** Adds free permits (negative removes them). @returns the free permits after */
  async addPermits(permits: number): Promise<number> {
    const n = checkPermitDelta(permits);
    this.core.assertOpen();
    const reply = (await this.core.run(scripts['psem/add'], this.#keys, [n, this.#channel, 'add'])) as number[];
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
    const [available, acquired, leases] = (await this.core.run(scripts['psem/state'], this.#keys, [this.#channel, ''])) as number[];
    return { name: this.name, available: available ?? 0, acquired: acquired ?? 0, leases: leases ?? 0 };
  }

  /** ms left on the lease of permit `permitId`, or `null` when it is not held. */
  async remainingLease(permitId: string): Promise<number | null> {
    const id = checkPermitId(permitId);
    this.core.assertOpen();
    const reply = (await this.core.run(scripts['psem/state'], this.#keys, [this.#channel, id])) as number[];
    const left = reply[3] ?? -2;
    return left < 0 ? null : left;
  }

  /**
   * Waits until `permits` are free and takes them as one lease.
   * @param permits how many @default 1
   * @throws {AcquireTimeoutError} when `timeout` passes first
   */
  async acquire(permits = 1, options?: PermitAcquireOptions): Promise<Permit> {
    return (await traceAcquire('permit-semaphore', this.name, options, (trace) => this.#acquire(permits, options, true, trace))) as Permit;
  }

  /** One attempt (or a wait of at most `timeout` ms): the permit, or `null` when not enough are free. */
  tryAcquire(permits = 1, options?: PermitAcquireOptions): Promise<Permit | null> {
    return traceAcquire('permit-semaphore', this.name, options, (trace) => this.#acquire(permits, options, false, trace));
  }

  /** Runs `fn` holding `permits` permits and gives them back afterwards. `fn` gets the permit (its `signal`). */
  async withPermit<T>(fn: (permit: Permit) => Promise<T> | T, permits = 1, options?: PermitAcquireOptions): Promise<T> {
    if (typeof fn !== 'function') throw new TypeError(`fn must be a function, got ${typeof fn}`);
    await using permit = await this.acquire(permits, options);
    return await fn(permit);
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
    return (await this.#releaseById(id)) > 0;
  }

  /** Sets permit `permitId`'s lease to `leaseMs` from now. @returns false when no such permit is held */
  async extend(permitId: string, leaseMs: number): Promise<boolean> {
    const id = checkPermitId(permitId);
    const lease = optDuration(leaseMs, 'leaseMs');
    if (lease === undefined) throw new TypeError('leaseMs must be a number of milliseconds, got undefined');
    this.core.assertOpen();
    return this.#renewById(id, lease);
  }

  /** Returns the permits given back (0 = not held). */
  async #releaseById(id: string): Promise<number> {
    return (await this.core.run(scripts['psem/release'], this.#keys, [id, this.#channel])) as number;
  }

  async #renewById(id: string, leaseMs: number): Promise<boolean> {
    return (await this.core.run(scripts['psem/renew'], this.#keys, [id, leaseMs, this.#channel])) === 1;
  }

  /** `required`: `acquire()` — no time limit by default, and the time running out is an {@link AcquireTimeoutError}. */
  async #acquire(permits: unknown, options: PermitAcquireOptions | undefined, required: boolean, trace: AcquireContext | undefined): Promise<Permit | null> {
    const n = checkPermits(permits);
    const opts = checkOptions<PermitAcquireOptions>(options);
    checkKnownKeys(opts, ACQUIRE_KEYS);
    const timeout = optDuration(opts.timeout, 'options.timeout', 0) ?? (required ? undefined : 0);
    const fixedLease = optDuration(opts.lease, 'options.lease');
    const signal = optSignal(opts.signal, 'options.signal');
    this.core.assertOpen();
    const core = this.core;
    const ready = core.ready();
    if (ready) await ready;
    const leaseMs = fixedLease ?? core.settings.watchdogLease;
    const permit = await waitFor(core, {
      name: this.name,
      channel: this.#channel,
      timeout,
      signal,
      trace,
      attempt: async (budget) => {
        const id = randomBytes(16).toString('hex');
        const sentAt = now();
        let reply: number[];
        try {
          reply = (await core.run(scripts['psem/acquire'], this.#keys, [id, n, leaseMs, this.#channel], budget)) as number[];
        } catch (error) {
          // The reply was lost: the permit may be ours in Redis. Give it back; its lease bounds it anyway.
          if (error instanceof RedisConnectionError) this.#releaseById(id).catch(() => {});
          throw error;
        }
        if (reply[0] === 1) return { done: true, value: new Permit(this.#table.held(id, 0, sentAt, leaseMs, fixedLease === undefined), this, n) };
        const hint = reply[1] ?? -1;
        return { done: false, retryInMs: hint < 0 ? SEMAPHORE_RECHECK_MS : Math.min(hint, SEMAPHORE_RECHECK_MS) };
      },
    });
    if (!permit && required) throw new AcquireTimeoutError(this.name, timeout ?? 0);
    return permit;
  }
}

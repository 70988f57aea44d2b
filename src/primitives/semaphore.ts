/**
 * The counting semaphore: a number of permits in Redis; `acquire(n)` takes n when n are free, `release(n)`
 * gives n back and wakes waiters over pub/sub.
 *
 * Permits have no owner and no lease (as in Redisson): any caller may release, and permits taken by a process
 * that dies are gone until someone adds them back. When that matters, use the {@link PermitExpirableSemaphore}.
 *
 * Zero permits is a no-op, as in Redisson: `acquire(0)` / `tryAcquire(0)` return at once with an empty hold (no Redis
 * call), `release(0)` gives nothing back and returns the free permits.
 *
 * @module
 */
import type { Core } from '../core.js';
import { AcquireTimeoutError } from '../errors.js';
import { Held } from '../internal/held.js';
import { traceAcquire, type HeldFacts } from '../internal/trace.js';
import type { AcquireContext } from '../diagnostics.js';
import { checkInt, checkKnownKeys, checkOptions, optDuration, optSignal } from '../internal/validate.js';
import { waitFor } from '../internal/wait.js';
import { scripts } from '../lua/scripts.gen.js';

/** Most permits one call may take, give or set: keeps every count a safe integer in Redis and in JS. */
export const MAX_PERMITS = 2 ** 40;

/** Without a lease to bound a wait, a waiter checks again at least this often (in case a wake-up was lost). */
export const SEMAPHORE_RECHECK_MS = 10_000;

/** Options of {@link Semaphore.acquire}. */
export interface SemaphoreAcquireOptions {
  /**
   * How long to wait for the permits, in ms. `0` makes a single attempt.
   * @default no limit for `acquire()`; `0` for `tryAcquire()`
   */
  timeout?: number;
  /** Aborts the wait: the promise rejects with `signal.reason`. */
  signal?: AbortSignal;
}

const ACQUIRE_KEYS = ['timeout', 'signal'] as const;

/** Options of {@link Semaphore.trySetPermits}. */
export interface SemaphoreSetOptions {
  /**
   * A TTL for the semaphore, in ms: it is deleted then (with its permits), whoever holds some. Acquiring and
   * releasing keep the TTL; a release after it ran out creates nothing (see `SemaphorePermits.release`).
   * @default undefined: the semaphore persists until deleted
   */
  ttl?: number;
}

const SET_KEYS = ['ttl'] as const;

/**
 * Permits taken by one `acquire`. Release them once (`release()` or `await using`); a second release does nothing.
 * `holdfast.close()` releases the ones still held.
 */
export class SemaphorePermits extends Held {
  /** Given back by `close()`. */
  #closed = false;

  /** @internal */
  constructor(
    /** The semaphore these permits came from. */
    readonly semaphore: Semaphore,
    /** How many permits this holds. */
    readonly permits: number,
  ) {
    super();
  }

  /** @internal */
  override diagnostics(): HeldFacts {
    return { kind: 'semaphore', name: this.semaphore.name, permits: this.permits };
  }

  /**
   * Gives the permits back and wakes waiters; when the semaphore was deleted (or its TTL ran out) meanwhile, gives
   * nothing back and does not create it again (`releaseIfExists`).
   */
  protected async releaseOnce(): Promise<void> {
    if (this.#closed || this.permits === 0) return;
    this.semaphore.core.holds.delete(this);
    await this.semaphore.releaseIfExists(this.permits);
  }

  /** @internal */
  async closeHold(): Promise<void> {
    if (this.released || this.#closed || this.permits === 0) return;
    this.#closed = true;
    await this.semaphore.core.run(scripts['sem/release'], [this.semaphore.core.keys.semaphore(this.semaphore.name)], [
      this.permits,
      this.semaphore.core.keys.semaphoreChannel(this.semaphore.name),
      '1',
    ]);
  }
}

/** @internal */
export function checkPermits(value: unknown, what = 'permits'): number {
  return checkInt(value, what, 1, MAX_PERMITS);
}

/** @internal A non-zero permit delta (negative removes permits). */
export function checkPermitDelta(value: unknown, what = 'permits'): number {
  const n = checkInt(value, what, -MAX_PERMITS, MAX_PERMITS);
  if (n === 0) throw new RangeError(`${what} must not be 0`);
  return n;
}

/**
 * A distributed counting semaphore, from `holdfast.semaphore(name)`. Set its permits once with `trySetPermits`
 * (a semaphore that was never set has 0 permits).
 *
 * @example
 * ```ts
 * const sem = holdfast.semaphore('pdf-renderers');
 * await sem.trySetPermits(3);
 * await using permit = await sem.acquire(1, { timeout: 10_000 });
 * await render();
 * ```
 */
export class Semaphore {
  /** @internal */
  constructor(
    /** @internal */
    readonly core: Core,
    /** The semaphore's name. */
    readonly name: string,
  ) {}

  get #key(): string {
    return this.core.keys.semaphore(this.name);
  }
  get #channel(): string {
    return this.core.keys.semaphoreChannel(this.name);
  }

  /**
   * Sets the number of permits if the semaphore does not exist yet, optionally with a TTL (`options.ttl`, in ms).
   * @returns true when set
   */
  async trySetPermits(permits: number, options?: SemaphoreSetOptions): Promise<boolean> {
    const n = checkInt(permits, 'permits', 0, MAX_PERMITS);
    const opts = checkOptions<SemaphoreSetOptions>(options, 'options');
    checkKnownKeys(opts, SET_KEYS);
    const ttl = optDuration(opts.ttl, 'options.ttl');
    this.core.assertOpen();
    return (await this.core.run(scripts['sem/try-set'], [this.#key], [n, this.#channel, ttl ?? 0])) === 1;
  }

  /** True when the semaphore exists (set, and neither deleted nor expired). */
  async exists(): Promise<boolean> {
    this.core.assertOpen();
    return (await this.core.run(scripts['sem/exists'], [this.#key], [])) === 1;
  }

  /**
   * Waits until `permits` are free and takes them. `acquire(0)` returns an empty hold at once.
   * @param permits how many @default 1
   * @throws {AcquireTimeoutError} when `timeout` passes first
   * @throws the signal's reason when `signal` aborts
   */
  async acquire(permits = 1, options?: SemaphoreAcquireOptions): Promise<SemaphorePermits> {
    return (await traceAcquire('semaphore', this.name, options, (trace) => this.#acquire(permits, options, true, trace))) as SemaphorePermits;
  }

  /**
   * One attempt (or a wait of at most `timeout` ms): the permits, or `null` when not enough are free.
   * @param permits how many @default 1
   */
  tryAcquire(permits = 1, options?: SemaphoreAcquireOptions): Promise<SemaphorePermits | null> {
    return traceAcquire('semaphore', this.name, options, (trace) => this.#acquire(permits, options, false, trace));
  }

  /** Runs `fn` holding `permits` permits and gives them back afterwards, also when `fn` throws. */
  async withPermits<T>(fn: () => Promise<T> | T, permits = 1, options?: SemaphoreAcquireOptions): Promise<T> {
    if (typeof fn !== 'function') throw new TypeError(`fn must be a function, got ${typeof fn}`);
    await using _held = await this.acquire(permits, options);
    return await fn();
  }

  /**
   * Gives `permits` back (any caller may) and wakes waiters. Creates the semaphore (without a TTL) when it does not
   * exist; {@link Semaphore.releaseIfExists} does not. `release(0)` changes nothing.
   * @param permits how many @default 1
   * @returns the free permits after the release
   */
  async release(permits = 1): Promise<number> {
    const n = checkInt(permits, 'permits', 0, MAX_PERMITS);
    this.core.assertOpen();
    if (n === 0) return this.availablePermits();
    return await this.core.run(scripts['sem/release'], [this.#key], [n, this.#channel, '0']);
  }

  /**
   * Gives `permits` back only if the semaphore exists: on a deleted (or expired) semaphore it does nothing and does
   * not create it again (redis-semaphore's and Redisson's release of a semaphore that is gone). `releaseIfExists(0)`
   * changes nothing.
   * @param permits how many @default 1
   * @returns the free permits after the release, or `null` when the semaphore does not exist
   */
  async releaseIfExists(permits = 1): Promise<number | null> {
    const n = checkInt(permits, 'permits', 0, MAX_PERMITS);
    this.core.assertOpen();
    if (n === 0) return (await this.exists()) ? this.availablePermits() : null;
    const free = await this.core.run(scripts['sem/release'], [this.#key], [n, this.#channel, '1']);
    return free < 0 ? null : free;
  }

  /** Adds permits (a negative number removes them; the count may go below zero). @returns the free permits after */
  async addPermits(permits: number): Promise<number> {
    const n = checkPermitDelta(permits);
    this.core.assertOpen();
    return await this.core.run(scripts['sem/release'], [this.#key], [n, this.#channel, '0']);
  }

  /** The number of free permits now. */
  async availablePermits(): Promise<number> {
    this.core.assertOpen();
    return await this.core.run(scripts['sem/available'], [this.#key], []);
  }

  /** Takes every free permit. @returns how many were taken */
  async drainPermits(): Promise<number> {
    this.core.assertOpen();
    return await this.core.run(scripts['sem/drain'], [this.#key], []);
  }

  /** Deletes the semaphore (its permits are gone; waiters keep waiting until it is set again). @returns true if it existed */
  async delete(): Promise<boolean> {
    this.core.assertOpen();
    return (await this.core.run(scripts['sem/delete'], [this.#key], [])) === 1;
  }

  /** `required` (acquire): no default time limit, and the time running out is an `AcquireTimeoutError`. */
  async #acquire(permits: unknown, options: SemaphoreAcquireOptions | undefined, required: boolean, trace: AcquireContext | undefined): Promise<SemaphorePermits | null> {
    const n = checkInt(permits, 'permits', 0, MAX_PERMITS);
    const opts = checkOptions<SemaphoreAcquireOptions>(options);
    checkKnownKeys(opts, ACQUIRE_KEYS);
    const timeout = optDuration(opts.timeout, 'options.timeout', 0) ?? (required ? undefined : 0);
    const signal = optSignal(opts.signal, 'options.signal');
    this.core.assertOpen();
    if (n === 0) {
      signal?.throwIfAborted();
      return new SemaphorePermits(this, 0); // zero permits: nothing to take, nothing to give back (Redisson's no-op)
    }
    const ready = this.core.ready();
    if (ready) await ready;
    const taken = await waitFor(this.core, {
      name: this.name,
      channel: this.#channel,
      timeout,
      signal,
      trace,
      attempt: async (budget) => {
        const reply = await this.core.run(scripts['sem/acquire'], [this.#key], [n], budget);
        if (reply[0] === 1) {
          const taken = new SemaphorePermits(this, n);
          this.core.holds.add(taken);
          return { done: true, value: taken };
        }
        return { done: false, retryInMs: SEMAPHORE_RECHECK_MS };
      },
    });
    if (!taken && required) throw new AcquireTimeoutError(this.name, timeout ?? 0);
    return taken;
  }
}

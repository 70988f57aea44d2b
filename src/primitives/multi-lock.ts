/**
 * The multi-lock: several reentrant locks taken all-or-nothing and released together.
 *
 * Deadlock freedom: the locks are always taken in one global order (sorted by their Redis key), so two multi-locks
 * over overlapping sets can never each hold what the other waits for. One `timeout` covers the whole acquisition;
 * if it runs out (or the signal aborts, or Redis fails) every lock taken so far is released before the error is
 * thrown: nothing stays held. The held multi-lock has one `signal` that aborts when any of its locks is lost.
 *
 * @module
 */
import { AcquireTimeoutError, LockNotHeldError } from '../errors.js';
import { Held } from '../internal/held.js';
import { traceAcquire, type HeldFacts } from '../internal/trace.js';
import type { AcquireContext } from '../diagnostics.js';
import { now } from '../internal/clock.js';
import { checkKnownKeys, checkName, checkOptions, optDuration, optSignal } from '../internal/validate.js';
import { Lock, type AcquireOptions, type HeldLock } from './lock.js';

/** Most locks one multi-lock may cover. */
export const MAX_MULTI_LOCKS = 1000;

const ACQUIRE_KEYS = ['timeout', 'lease', 'signal', 'owner'] as const;

/** What `withLock` hands the callback. */
export interface MultiLockScope {
  /** Aborts with a `LockLostError` if any of the locks is lost while `fn` runs. */
  signal: AbortSignal;
  /** Fencing token per lock name. */
  tokens: ReadonlyMap<string, number>;
  /** The held multi-lock. */
  lock: HeldMultiLock;
}

/** All the locks of a {@link MultiLock}, held. Release once (`release()` or `await using`). */
export class HeldMultiLock extends Held {
  /** Aborts, with the `LockLostError` of the first lock lost, when any lock of the group is lost. */
  readonly signal: AbortSignal;

  /** @internal */
  constructor(
    /** The held locks, in acquisition (sorted) order. */
    readonly locks: readonly HeldLock[],
  ) {
    super();
    this.signal = AbortSignal.any(locks.map((l) => l.signal));
  }

  /** Fencing token per lock name. */
  get tokens(): ReadonlyMap<string, number> {
    return new Map(this.locks.map((l) => [l.name, l.token]));
  }
  /** True once any lock of the group was lost. */
  get lost(): boolean {
    return this.signal.aborted;
  }
  /**
   * Releases every lock (all are attempted, whatever fails). Idempotent.
   * @throws {LockNotHeldError} when some lock had been lost (the others are released all the same)
   * @throws {ReleaseFailedError} when some lock's release could not reach Redis (a later call retries those)
   */
  protected releaseOnce(): Promise<void> {
    return releaseAll(this.locks);
  }

  /** @internal */
  override diagnostics(): HeldFacts {
    return { kind: 'multi-lock', name: this.locks.map((l) => l.name).join('+') };
  }
}

async function releaseAll(locks: readonly HeldLock[]): Promise<void> {
  const results = await Promise.allSettled(locks.map((l) => l.release()));
  const failures = results.flatMap((r) => (r.status === 'rejected' ? [r.reason as Error] : []));
  // A failed release matters more than a lock already lost: report it first.
  const first = failures.find((e) => !(e instanceof LockNotHeldError)) ?? failures[0];
  if (first !== undefined) throw first;
}

/**
 * A group of locks taken together, from `holdfast.multiLock(['a', 'b'])` or `holdfast.multiLock([lockA, lockB])`
 * (locks of other holdfast clients, even on other Redis servers, may be mixed in).
 *
 * @example
 * ```ts
 * // move stock between two warehouses: both rows locked, in a deadlock-free order
 * await using both = await holdfast.multiLock(['stock:A', 'stock:B']).acquire({ timeout: 5000 });
 * await transfer({ fences: both.tokens });
 * ```
 */
export class MultiLock {
  /** The locks, in the order they are taken. */
  readonly locks: readonly Lock[];

  /** @internal */
  constructor(locks: readonly Lock[]) {
    const sorted = [...locks].sort((a, b) => compare(a.core.keys.lock(a.name), b.core.keys.lock(b.name)));
    for (let i = 1; i < sorted.length; i++) {
      const a = sorted[i - 1] as Lock;
      const b = sorted[i] as Lock;
      if (a.core === b.core && a.name === b.name) throw new RangeError(`locks must be distinct: "${a.name}" is given twice`);
    }
    this.locks = sorted;
  }

  /** The lock names, in the order they are taken. */
  get names(): string[] {
    return this.locks.map((l) => l.name);
  }

  /** A name for errors: the names joined with `+`. */
  get name(): string {
    return this.names.join('+');
  }

  /**
   * Takes every lock, waiting at most `timeout` ms for all of them together. The same `lease` and `owner` apply to
   * each lock; with a fixed `lease`, every lock's lease is reset once all are held, so they end together.
   * @throws {AcquireTimeoutError} when `timeout` passes first (nothing stays held)
   * @throws the signal's reason when `signal` aborts (nothing stays held)
   */
  async acquire(options?: AcquireOptions): Promise<HeldMultiLock> {
    return (await traceAcquire('multi-lock', this.name, options, (trace) => this.#acquire(options, true, trace))) as HeldMultiLock;
  }

  /** One attempt at each lock (or a wait of at most `timeout` ms): all of them, or `null` and nothing held. */
  tryAcquire(options?: AcquireOptions): Promise<HeldMultiLock | null> {
    return traceAcquire('multi-lock', this.name, options, (trace) => this.#acquire(options, false, trace));
  }

  /** Runs `fn` holding every lock and releases them afterwards, also when `fn` throws. */
  async withLock<T>(fn: (scope: MultiLockScope) => Promise<T> | T, options?: AcquireOptions): Promise<T> {
    if (typeof fn !== 'function') throw new TypeError(`fn must be a function, got ${typeof fn}`);
    await using held = await this.acquire(options);
    return await fn({ signal: held.signal, tokens: held.tokens, lock: held });
  }

  /** `required`: `acquire()` — no time limit by default, and the time running out is an {@link AcquireTimeoutError}. */
  async #acquire(options: AcquireOptions | undefined, required: boolean, trace: AcquireContext | undefined): Promise<HeldMultiLock | null> {
    const opts = checkOptions<AcquireOptions>(options);
    checkKnownKeys(opts, ACQUIRE_KEYS);
    const timeout = optDuration(opts.timeout, 'options.timeout', 0) ?? (required ? undefined : 0);
    const lease = optDuration(opts.lease, 'options.lease');
    const signal = optSignal(opts.signal, 'options.signal');
    if (opts.owner !== undefined) checkName(opts.owner, 'options.owner');
    for (const lock of this.locks) lock.core.assertOpen();

    const deadline = timeout === undefined ? Infinity : now() + timeout;
    if (trace) trace.attempts = 1; // one all-or-nothing attempt; each lock traces its own
    const held: HeldLock[] = [];
    let complete = false;
    try {
      for (const lock of this.locks) {
        signal?.throwIfAborted();
        const each: AcquireOptions = {};
        if (lease !== undefined) each.lease = lease;
        if (signal !== undefined) each.signal = signal;
        if (opts.owner !== undefined) each.owner = opts.owner;
        let one: HeldLock | null;
        if (timeout === undefined) {
          one = await lock.acquire(each);
        } else {
          one = await lock.tryAcquire({ ...each, timeout: Math.max(0, Math.ceil(deadline - now())) });
        }
        if (!one) {
          if (!required) return null;
          throw new AcquireTimeoutError(this.name, timeout ?? 0);
        }
        held.push(one);
      }
      if (lease !== undefined && held.length > 1) await Promise.all(held.map((h) => h.extend(lease)));
      complete = true;
      return new HeldMultiLock(held);
    } catch (error) {
      if (error instanceof AcquireTimeoutError && error.lockName !== this.name) throw new AcquireTimeoutError(this.name, timeout ?? 0, { cause: error });
      throw error;
    } finally {
      // all-or-nothing: a failed acquisition releases what it took
      if (!complete) await releaseAll(held).catch(() => {});
    }
  }
}

/** Plain code-unit order: the same in every process. */
function compare(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

/** @internal Validates the argument of `holdfast.multiLock`. */
export function toLocks(items: unknown, make: (name: string) => Lock): Lock[] {
  if (!Array.isArray(items)) throw new TypeError('locks must be an array of lock names or Lock objects');
  if (items.length === 0) throw new RangeError('locks must not be empty');
  if (items.length > MAX_MULTI_LOCKS) throw new RangeError(`locks must have at most ${MAX_MULTI_LOCKS} entries, got ${items.length}`);
  return items.map((item: unknown, i) => {
    if (item instanceof Lock) return item;
    if (typeof item === 'string') return make(checkName(item, `locks[${i}]`));
    throw new TypeError(`locks[${i}] must be a lock name or a Lock, got ${item === null ? 'null' : typeof item}`);
  });
}

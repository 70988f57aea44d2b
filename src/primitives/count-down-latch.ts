/**
 * The count-down latch: a count in Redis; `countDown()` decrements it, and at zero the latch opens (the key is
 * deleted) and every waiter, in every process, is woken over pub/sub. A latch that does not exist is open.
 *
 * @module
 */
import type { Core } from '../core.js';
import { checkInt, checkKnownKeys, checkOptions, optDuration, optSignal } from '../internal/validate.js';
import { waitFor } from '../internal/wait.js';
import { scripts } from '../lua/scripts.gen.js';
import { MAX_PERMITS, SEMAPHORE_RECHECK_MS } from './semaphore.js';

/** Options of {@link CountDownLatch.trySetCount}. */
export interface LatchSetOptions {
  /**
   * Deletes the latch (opens it) after this many ms, so a latch whose counters died does not stay shut forever.
   * @default undefined: no expiry
   */
  ttl?: number;
}

/** Options of {@link CountDownLatch.await}. */
export interface LatchAwaitOptions {
  /**
   * How long to wait, in ms. `0` checks once.
   * @default no limit
   */
  timeout?: number;
  /** Aborts the wait: the promise rejects with `signal.reason`. */
  signal?: AbortSignal;
}

/**
 * A distributed count-down latch, from `holdfast.countDownLatch(name)`.
 *
 * @example
 * ```ts
 * const ready = holdfast.countDownLatch('shards-loaded');
 * await ready.trySetCount(8);
 * // in each of 8 workers: await ready.countDown();
 * if (!(await ready.await({ timeout: 60_000 }))) throw new Error('not all shards loaded');
 * ```
 */
export class CountDownLatch {
  /** @internal */
  constructor(
    /** @internal */
    readonly core: Core,
    /** The latch's name. */
    readonly name: string,
  ) {}

  get #key(): string {
    return this.core.keys.latch(this.name);
  }

  /** Sets the count if the latch is not counting down already. @returns true when set */
  async trySetCount(count: number, options?: LatchSetOptions): Promise<boolean> {
    const n = checkInt(count, 'count', 1, MAX_PERMITS);
    const opts = checkOptions<LatchSetOptions>(options);
    checkKnownKeys(opts, ['ttl']);
    const ttl = optDuration(opts.ttl, 'options.ttl') ?? 0;
    this.core.assertOpen();
    return (await this.core.run(scripts['latch/try-set'], [this.#key], [n, ttl])) === 1;
  }

  /** Counts down by one; at zero the latch opens and every waiter wakes. @returns the count left (0 = open) */
  async countDown(): Promise<number> {
    this.core.assertOpen();
    return await this.core.run(scripts['latch/count-down'], [this.#key], [this.core.keys.latchChannel(this.name)]);
  }

  /** The count now (0 = open). */
  async getCount(): Promise<number> {
    this.core.assertOpen();
    const [count] = await this.core.run(scripts['latch/state'], [this.#key], []);
    return count ?? 0;
  }

  /**
   * Waits until the count reaches zero.
   * @returns true when the latch is open; false when `timeout` passed first
   * @throws the signal's reason when `signal` aborts
   */
  async await(options?: LatchAwaitOptions): Promise<boolean> {
    const opts = checkOptions<LatchAwaitOptions>(options);
    checkKnownKeys(opts, ['timeout', 'signal']);
    const timeout = optDuration(opts.timeout, 'options.timeout', 0);
    const signal = optSignal(opts.signal, 'options.signal');
    this.core.assertOpen();
    const open = await waitFor(this.core, {
        name: this.name,
        channel: this.core.keys.latchChannel(this.name),
        timeout,
        signal,
        attempt: async (budget) => {
          const [count, pttl] = await this.core.run(scripts['latch/state'], [this.#key], [], budget);
          if ((count ?? 0) <= 0) return { done: true, value: true };
          // a latch with a TTL opens silently when it expires: wake up then at the latest
          const left = pttl ?? -1;
          return { done: false, retryInMs: left >= 0 ? Math.min(left, SEMAPHORE_RECHECK_MS) : SEMAPHORE_RECHECK_MS };
        },
      });
    return open === true;
  }

  /** Deletes the latch: it opens and every waiter wakes. @returns true if it existed */
  async delete(): Promise<boolean> {
    this.core.assertOpen();
    return (await this.core.run(scripts['latch/delete'], [this.#key], [this.core.keys.latchChannel(this.name)])) === 1;
  }
}

/**
 * A counting semaphore over ZooKeeper: `_c_<guid>-permit-<seq>` nodes; the first `permits` nodes in sequence
 * order hold a permit. A permit frees when its holder releases it or its session ends (a crashed holder's permit
 * comes back after the session timeout).
 *
 * Waiters watch the directory's children rather than one node: any holder ahead may leave first, so "watch the
 * predecessor" does not apply to N permits. That is a herd (every waiter re-reads the queue on each release), the
 * price Curator's `InterProcessSemaphoreV2` also pays. As in Curator, `permits` is a convention: every client of
 * one semaphore must pass the same number.
 *
 * @module
 */
import type { AcquireContext } from '../diagnostics.js';
import { AcquireTimeoutError } from '../errors.js';
import { traceAcquire } from '../internal/trace.js';
import { checkInt } from '../internal/validate.js';
import type { ZkHeldLock } from './hold.js';
import { readQueue, type ZkCore } from './queue.js';
import { acquireHold, parseAcquire, type QueueSpec } from './lock.js';

/** Options of the ZooKeeper semaphore's `acquire()` / `tryAcquire()`. */
export interface ZkPermitOptions {
  /**
   * How long to wait, in ms. `0` makes a single attempt.
   * @default no limit for `acquire()`; `0` for `tryAcquire()`
   */
  timeout?: number;
  /** Aborts the wait. */
  signal?: AbortSignal;
}

/** A counting semaphore on ZooKeeper, from `zk.semaphore(name, permits)`. Not reentrant: each acquire is a permit. */
export class ZkSemaphore {
  readonly #spec: QueueSpec;

  /** @internal */
  constructor(
    /** @internal */
    readonly core: ZkCore,
    /** The semaphore's name. */
    readonly name: string,
    /** The number of permits (the same in every client). */
    readonly permits: number,
  ) {
    this.#spec = {
      key: `semaphore:${name}`,
      name,
      dir: core.dir('semaphore', name),
      kind: 'permit',
      primitive: 'zk-semaphore',
      verdict: (_sorted, index) => (index < permits ? { granted: true } : { granted: false, watchChildren: true }),
    };
  }

  async #acquire(options: ZkPermitOptions | undefined, defaultTimeout: number | undefined, trace: AcquireContext | undefined): Promise<ZkHeldLock | null> {
    const parsed = parseAcquire(options, defaultTimeout);
    if (parsed.owner !== undefined) throw new TypeError('options.owner is not an option of a semaphore (known: timeout, signal)');
    // Every permit is its own owner: a semaphore is not reentrant.
    return acquireHold(this.core, this.#spec, this.core.newOwner(), parsed, trace);
  }

  /**
   * Waits for a permit. The held permit has the same shape as a held lock (`release()`, `token`, `signal`).
   * @throws {AcquireTimeoutError} when `timeout` passes first
   */
  acquire(options?: ZkPermitOptions): Promise<ZkHeldLock> {
    return traceAcquire('zk-semaphore', this.name, options, async (trace) => {
      const held = await this.#acquire(options, undefined, trace);
      if (!held) throw new AcquireTimeoutError(this.name, options?.timeout ?? 0);
      return held;
    });
  }

  /** One attempt (or a wait of at most `timeout` ms): a permit or `null`. */
  tryAcquire(options?: ZkPermitOptions): Promise<ZkHeldLock | null> {
    return traceAcquire('zk-semaphore', this.name, options, (trace) => this.#acquire(options, 0, trace));
  }

  /** Runs `fn` holding a permit; releases it afterwards. */
  async withPermit<T>(fn: (permit: ZkHeldLock) => Promise<T> | T, options?: ZkPermitOptions): Promise<T> {
    if (typeof fn !== 'function') throw new TypeError(`fn must be a function, got ${typeof fn}`);
    const permit = await this.acquire(options);
    try {
      return await fn(permit);
    } finally {
      await permit[Symbol.asyncDispose]();
    }
  }

  /** Permits not held right now (waiters count as holding nothing). */
  async availablePermits(): Promise<number> {
    return Math.max(0, this.permits - (await this.queue()).length);
  }

  /** The queue: the first `permits` nodes hold a permit, the rest wait. */
  queue(): Promise<string[]> {
    return readQueue(this.core, this.#spec.dir);
  }
}

/** Validates a permit count. */
export function checkPermits(permits: unknown): number {
  return checkInt(permits, 'permits', 1, 1_000_000);
}

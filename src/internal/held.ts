/**
 * The base of every held object (a lock, a permit, a group of locks, a ZooKeeper hold): `release()` that may be
 * called any number of times, and `[Symbol.asyncDispose]` that never throws for a hold already lost.
 */
import { LockNotHeldError, ReleaseFailedError } from '../errors.js';
import type { AcquireContext } from '../diagnostics.js';
import { traceRelease, type HeldFacts } from './trace.js';

export abstract class Held implements AsyncDisposable {
  #released: Promise<void> | undefined;
  /** @internal The traced acquisition that returned this (set only while someone listens to the channels). */
  acquisition: AcquireContext | undefined = undefined;
  /** @internal When that acquisition ended. */
  acquiredAt = 0;

  /** Releases in the backend; called once per `release()` that is not already settled or in flight. */
  protected abstract releaseOnce(): Promise<void>;

  /** @internal What the diagnostics channels say about this hold; `undefined` publishes nothing. */
  diagnostics(): HeldFacts | undefined {
    return undefined;
  }

  /** True once `release()` was called (and did not fail with a `ReleaseFailedError`, which a later call retries). */
  get released(): boolean {
    return this.#released !== undefined;
  }

  /**
   * Releases this acquisition. Idempotent: a second call returns the first call's promise, except after a
   * `ReleaseFailedError`, when it tries again.
   */
  release(): Promise<void> {
    if (this.#released) return this.#released;
    const released = traceRelease(this, () => this.releaseOnce()).catch((error: unknown) => {
      if (error instanceof ReleaseFailedError && this.#released === released) this.#released = undefined;
      throw error;
    });
    this.#released = released;
    return released;
  }

  /** Releases; never throws for a hold that was already lost or released. */
  async [Symbol.asyncDispose](): Promise<void> {
    try {
      await this.release();
    } catch (error) {
      if (!(error instanceof LockNotHeldError)) throw error;
    }
  }
}

/**
 * The `withLock` scope every reentrant primitive shares: run `fn` with this hold recorded in the async context (so
 * nested acquisitions of the same key in `fn`'s call chain re-enter under its owner), then dispose of the hold, also
 * when `fn` throws.
 */
import type { Core } from '../core.js';

/** What a held object must offer to scope a callback. */
export interface ScopedHold extends AsyncDisposable {
  readonly owner: string;
}

export async function runHolding<H extends ScopedHold, T>(core: Core, key: string, held: H, active: () => boolean, fn: () => Promise<T> | T): Promise<T> {
  try {
    const context = new Map(core.context.getStore() ?? []);
    context.set(key, { owner: held.owner, active });
    return await core.context.run(context, fn);
  } finally {
    await held[Symbol.asyncDispose]();
  }
}

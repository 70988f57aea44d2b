/**
 * The `withLock` scope every reentrant primitive shares: run `fn` with this hold recorded in the async context (so
 * nested acquisitions of the same key in `fn`'s call chain re-enter under its owner), then dispose of the hold, also
 * when `fn` throws.
 */
import type { Core } from '../core.js';
import type { LeasedHeld } from './hold.js';

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

/**
 * `withLock` of every reentrant primitive: checks `fn`, acquires, and runs `fn` with the scope `scopeOf(held)` inside
 * {@link runHolding} under the async-context `key` (active while the hold is).
 */
export async function withHeld<H extends LeasedHeld, S, T>(
  core: Core,
  key: string,
  fn: (scope: S) => Promise<T> | T,
  acquire: () => Promise<H>,
  scopeOf: (held: H) => S,
): Promise<T> {
  if (typeof fn !== 'function') throw new TypeError(`fn must be a function, got ${typeof fn}`);
  const held = await acquire();
  const hold = held.hold;
  return runHolding(core, key, held, () => hold.active, () => fn(scopeOf(held)));
}

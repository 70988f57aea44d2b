/**
 * The one acquire loop every waiting primitive uses: try; if busy, subscribe (then try again, so a release between
 * the first try and the subscription is not missed); sleep until a message, the hint the attempt gave (usually the
 * holder's remaining lease, because an expiry publishes nothing), the caller's timeout or its signal.
 */
import type { Core } from '../core.js';
import type { AcquireContext } from '../diagnostics.js';
import { didNotRun } from '../script.js';
import { LATE_GRANT_BACKOFF, pauseAfter, POLL_BACKOFF } from './backoff.js';
import { sleep as pause } from './sleep.js';
import { now } from './clock.js';
import { LateGrant } from './hold.js';
import type { Listener } from './notifier.js';

/**
 * What one attempt returned: the prize, or how long at most to sleep before the next attempt. `late`: the store
 * granted it, but the reply came past its lease and the grant was undone (see `LateGrant`).
 */
export type Attempt<T> = { done: true; value: T } | { done: false; retryInMs: number; late?: LateGrant };

/**
 * How long a waiter sleeps (at most: a message wakes it sooner) after an attempt that found the lock held, from the
 * `PTTL` the attempt's script read: -2 (the key is gone) tries again at once, -1 (no TTL) waits for a message only,
 * and any other value is what is left of the holder's lease, 0 included: a lease with 0 ms left lapses within the
 * millisecond, so the waiter looks again at once rather than waiting for a message.
 */
export function retryAfterPttl(pttl: number): number {
  return pttl === -2 ? 0 : pttl;
}

/**
 * Late grants in a row (each one's round trip alone outlasted its lease) after which a wait gives up with a
 * `RangeError`: the lease cannot be honoured by this client's store at its current speed.
 */
const HOPELESS_GRANTS = 3;

/** How soon a waiter tries again after a Redis Cluster slot in migration refused its attempt. */
const MIGRATING_RETRY_MS = 50;

/**
 * For an attempt that rejected with `error`: a busy outcome, to try again, in two cases; else `error` is thrown again.
 * - A grant that came past its lease ({@link LateGrant}, see `HoldTable.held`): no grant. Once it is undone, the
 *   attempt reads as busy and `late` (a single attempt then finds nothing; a wait tries again after a pause of the
 *   late-grant backoff, within its timeout: never at once, or replies that keep coming late would make a hot loop).
 * - The attempt's script surely did not run because its slot is being migrated (see `didNotRun`) and the caller waits
 *   (`timeout` not 0): try again shortly. A migration refuses a script whose keys are not all on one node until it
 *   ends, which can outlast `commandTimeout`: the acquisition's own `timeout` bounds the wait instead.
 */
export function refusedWhileMigrating<T>(error: unknown, timeout: number | undefined): Attempt<T> | Promise<Attempt<T>> {
  if (error instanceof LateGrant) return error.undone.then((): Attempt<T> => ({ done: false, retryInMs: 0, late: error }));
  if (timeout === 0 || !didNotRun(error)) throw error;
  return { done: false, retryInMs: MIGRATING_RETRY_MS };
}

export interface WaitOptions<T> {
  name: string;
  channel: string;
  /** Registers the listener under this tag (see `Notifier.listen`): for per-owner wake-ups on a shared channel. */
  tag?: string | undefined;
  /**
   * When this client is already subscribed to `channel` (others wait on it here), register before the first attempt
   * instead of after it: the attempt's outcome cannot be missed, so the retry that follows a fresh subscription is
   * not needed. For waits whose attempt leaves state in Redis that a later message refers to (the fair lock's queue).
   */
  listenFirst?: boolean | undefined;
  /**
   * Do not barge past this process' own waiters: when others already wait on `channel` here, and the last attempt
   * made here said the resource stays busy for a while yet, queue behind them and sleep before the first attempt
   * (until a release message reaches this waiter, or that hint runs out). Without it a releaser that asks again at
   * once nearly always beats the waiter its release woke, and the lock never changes hands. Only for a fresh owner:
   * a re-entry must never wait.
   */
  politeFirst?: boolean | undefined;
  /** ms to wait; `undefined` = no limit; 0 = a single attempt. */
  timeout: number | undefined;
  signal: AbortSignal | undefined;
  /** One attempt; `budgetMs` (the client's commandTimeout) bounds its Redis command. */
  attempt: (budgetMs: number) => Promise<Attempt<T>>;
  /** Called when the wait gives up (timeout, abort, error) after subscribing: e.g. leave a queue. */
  onGiveUp?: (() => Promise<void>) | undefined;
  /**
   * The outcome of a first attempt the caller already made (a busy one): the loop starts from it instead of trying
   * again at once. The caller made that attempt only after checking `politeFirst` itself.
   */
  first?: Attempt<T> | undefined;
  /**
   * Called when a wake carried a payload (`+<payload>:<tag>`): the prize if the payload alone gives it (the fair
   * lock's hand-off), or `undefined` to make an attempt as usual.
   */
  onPayload?: ((payload: string) => T | undefined) | undefined;
  /** The acquisition's diagnostics context (when anyone listens): each attempt is counted on it. */
  trace?: AcquireContext | undefined;
}

/**
 * Runs the loop; resolves the prize, or `null` when the time is up (a single attempt that found it busy, or a wait
 * whose `timeout` passed: the last attempt is made at the deadline). `acquire()` turns `null` into an
 * `AcquireTimeoutError`, `tryAcquire()` returns it.
 */
export async function waitFor<T>(core: Core, opts: WaitOptions<T>): Promise<T | null> {
  const { signal, timeout } = opts;
  const deadline = timeout === undefined ? Infinity : now() + timeout;
  let listener: Listener | undefined;
  let gaveUp = true;
  let polls = 0;
  /** The round trips of the grants in a row that came too late (see `LATE_GRANT_BACKOFF`). */
  const slower: number[] = [];
  try {
    if (opts.listenFirst && timeout !== 0 && core.notifier.isSubscribed(opts.channel)) {
      listener = await core.notifier.listen(opts.channel, opts.tag);
    }
    let result = opts.first;
    const busyFor = core.notifier.busyFor(opts.channel);
    if (!result && opts.politeFirst && timeout !== 0 && busyFor > 0 && core.notifier.waiting(opts.channel) > 0) {
      listener = await core.notifier.listen(opts.channel, opts.tag);
      await listener.wait(Math.min(busyFor, deadline - now()), signal);
    }
    for (;; result = undefined) {
      if (!result) {
        signal?.throwIfAborted();
        core.assertOpen();
        // The wait timeout bounds the sleeping; each Redis call is bounded by commandTimeout.
        if (opts.trace) opts.trace.attempts++;
        result = await opts.attempt(core.settings.commandTimeout).catch((error: unknown) => refusedWhileMigrating<T>(error, timeout));
      }
      if (result.done) {
        gaveUp = false;
        return result.value;
      }
      if (timeout === 0) return null;
      if (result.retryInMs > 0) core.notifier.setBusyFor(opts.channel, result.retryInMs);
      if (now() >= deadline) return null;
      if (result.late) {
        // a lease the round trips keep outlasting can never be honoured: say so instead of trying for ever
        // (a grant is late when its round trip alone outlasted the lease less the drift allowance)
        const grant = result.late;
        slower.push(grant.tookMs);
        if (slower.length >= HOPELESS_GRANTS) {
          throw new RangeError(
            `the lease of "${opts.name}" (${grant.leaseMs} ms) is shorter than the round trips to the store: the last ${slower.length} grants came ${slower.map((ms) => Math.round(ms)).join(', ')} ms after their requests, past the lease, and were undone. Use a lease well above the round trip (or the watchdog: no lease)`,
          );
        }
        // the grant came past its lease and was undone: pause before asking again, and do not let the wake-up that
        // the undo itself published cut the pause short
        await pause(Math.min(pauseAfter(LATE_GRANT_BACKOFF, slower.length), Math.max(0, deadline - now())), signal);
        continue;
      }
      slower.length = 0;
      if (!listener) {
        listener = await core.notifier.listen(opts.channel, opts.tag);
        continue; // subscribed: try once more before sleeping
      }
      // a store that cannot wake waiters (see `Store.polling`) is polled, with the one backoff policy
      const poll = core.store.polling ? pauseAfter(POLL_BACKOFF, ++polls) : Infinity;
      const sleep = Math.min(result.retryInMs < 0 ? Infinity : Math.max(1, result.retryInMs), deadline - now(), poll);
      const woken = await listener.wait(sleep, signal);
      const payload = woken && opts.onPayload ? listener.takePayload() : undefined;
      const prize = payload === undefined ? undefined : opts.onPayload?.(payload);
      if (prize !== undefined) {
        gaveUp = false;
        return prize;
      }
    }
  } finally {
    listener?.close();
    if (gaveUp && opts.onGiveUp) {
      await opts.onGiveUp().catch(() => {
        /* best effort: the queue entry also expires */
      });
    }
  }
}

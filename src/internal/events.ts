/**
 * Lock events for those who only want to know, never to hold: wait until a lock is free, and hear its releases.
 * Both ride the notifier as observers, so they never take a wake from a local waiter that wants the lock.
 *
 * An expiry publishes nothing (Redis does not tell anyone a key expired unless keyspace notifications are on, and
 * holdfast does not require them). `waitUntilFree` therefore sleeps at most the holder's remaining lease and then looks
 * again: a lock that expires is seen free within about one round trip of its expiry. `onRelease` reports only what is
 * published: releases and force-unlocks, never an expiry.
 */
import type { Core } from '../core.js';
import { now } from './clock.js';
import { checkKnownKeys, checkOptions, optDuration, optFunction, optSignal } from './validate.js';

/** Options of `waitUntilFree`. */
export interface WaitUntilFreeOptions {
  /**
   * How long to wait, in ms. `0` looks once.
   * @default no limit
   */
  timeout?: number;
  /** Aborts the wait: the promise rejects with `signal.reason`. */
  signal?: AbortSignal;
}

const WAIT_KEYS = ['timeout', 'signal'] as const;

/** What a release listener is told. */
export interface ReleaseEvent {
  /** The name of the lock released. */
  name: string;
  /** `release`: a holder released it (its last hold); `force-unlock`: it was deleted whoever held it. */
  kind: 'release' | 'force-unlock';
}

/** Checks the options of `waitUntilFree`. */
export function waitUntilFreeParams(options: unknown): { timeout: number | undefined; signal: AbortSignal | undefined } {
  const opts = checkOptions<WaitUntilFreeOptions>(options);
  checkKnownKeys(opts, WAIT_KEYS);
  return { timeout: optDuration(opts.timeout, 'options.timeout', 0), signal: optSignal(opts.signal, 'options.signal') };
}

/**
 * Resolves true once `busyFor()` reports the resource free (`null`) or a release is heard on `channel` (it was free
 * then, even if taken again since), false when `timeout` passes first (the last look is made at the deadline). `busyFor()` returns `null` when free, else the ms the holder's lease has left (-1: no
 * lease, wait for a message only). Between looks it sleeps until a message on `channel` or that lease runs out.
 */
export async function waitUntilFree(
  core: Core,
  channel: string,
  busyFor: () => Promise<number | null>,
  timeout: number | undefined,
  signal: AbortSignal | undefined,
): Promise<boolean> {
  const deadline = timeout === undefined ? Infinity : now() + timeout;
  let heard = false;
  let wake: (() => void) | undefined;
  let unobserve: (() => void) | undefined;
  try {
    for (;;) {
      signal?.throwIfAborted();
      core.assertOpen();
      const left = await busyFor();
      if (left === null) return true;
      if (now() >= deadline) return false;
      if (!unobserve) {
        unobserve = await core.notifier.observe(channel, () => {
          heard = true;
          wake?.();
        });
        continue; // subscribed: look once more, so a release before the subscription is not missed
      }
      // A release message means the lock was free when it was sent, even if someone took it again since.
      if (heard) return true;
      const ms = Math.min(left < 0 ? Infinity : Math.max(1, left), deadline - now());
      await sleepUntilWoken(ms, signal, (w) => (wake = w));
      wake = undefined;
      if (heard) return true;
    }
  } finally {
    unobserve?.();
  }
}

function sleepUntilWoken(ms: number, signal: AbortSignal | undefined, setWake: (wake: () => void) => void): Promise<void> {
  return new Promise<void>((resolve, reject) => {
    let timer: NodeJS.Timeout | undefined;
    const done = (): void => {
      if (timer) clearTimeout(timer);
      signal?.removeEventListener('abort', onAbort);
      resolve();
    };
    const onAbort = (): void => {
      if (timer) clearTimeout(timer);
      reject(signal?.reason);
    };
    setWake(done);
    if (Number.isFinite(ms)) {
      timer = setTimeout(done, Math.max(0, ms));
      timer.unref();
    }
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}

/**
 * Calls `listener` for every release published on `channel` until the returned function is called; resolves once
 * subscribed (no release after that is missed while the subscriber connection is up).
 */
export async function onRelease(core: Core, name: string, channel: string, listener: unknown): Promise<() => void> {
  const fn = optFunction<(event: ReleaseEvent) => void>(listener, 'listener');
  if (!fn) throw new TypeError('listener must be a function, got undefined');
  core.assertOpen();
  return core.notifier.observe(channel, (message) => {
    // lock/release publishes '1' (one waiter per process), lock/force-unlock 'a' (all of them)
    fn({ name, kind: message === 'a' ? 'force-unlock' : 'release' });
  });
}

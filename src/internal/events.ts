/*
 * Lock events for those who only want to know, never to hold: wait until a lock is free, and hear its releases.
 * Both ride the notifier as observers, so they never take a wake from a local waiter that wants the lock.
 *
 * An expiry publishes nothing (Redis does not tell anyone a key expired unless keyspace notifications are on, and
 * holdfast does not require them). `waitUntilFree` therefore sleeps at most the holder's remaining lease and then looks
 * again: a lock that expires is seen free within about one round trip of its expiry. `onRelease` reports only what is
 * published: releases and force-unlocks, never an expiry.
 *
 * The plain lock publishes every release anyway (its waiters need it). The fair lock and the read-write lock publish
 * their events on a channel of their own, and only while an *events marker* key exists: a client that waits or
 * listens sets it (with a TTL, refreshed while it observes) before it subscribes and looks, so a release after that
 * look sees the marker and publishes; with nobody observing, a release pays one `EXISTS` and publishes nothing.
 * (A plain comment, not TSDoc: the declaration files carry this module's exported types, not its notes.)
 */
import type { Core } from '../core.js';
import { scripts } from '../lua/scripts.gen.js';
import { pauseAfter, POLL_BACKOFF } from './backoff.js';
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
  /** The side released, for a read-write lock's `release`. */
  side?: 'read' | 'write';
}

/** How long an events marker lives without a refresh, in ms; observers refresh it every third of this. */
const MARKER_TTL_MS = 30_000;

/** Per client, per marker key: how many observers keep it, and the timer that refreshes it. */
const markers = new WeakMap<Core, Map<string, { count: number; timer: NodeJS.Timeout }>>();

/**
 * Sets the events marker `key` (see the module's notes) and keeps it while the returned function is not called.
 * Resolves once it is set in Redis.
 */
export async function keepMarker(core: Core, key: string): Promise<() => void> {
  let byKey = markers.get(core);
  if (!byKey) markers.set(core, (byKey = new Map()));
  const set = (): Promise<unknown> => core.run(scripts['events/mark'], [key], [MARKER_TTL_MS]);
  let entry = byKey.get(key);
  if (!entry) {
    const timer = setInterval(() => {
      if (core.closed) return;
      set().catch(() => {
        /* unreachable: the next refresh tries again (the marker lives for three of them) */
      });
    }, MARKER_TTL_MS / 3);
    timer.unref();
    entry = { count: 0, timer };
    byKey.set(key, entry);
  }
  entry.count++;
  const kept = entry;
  const map = byKey;
  let done = false;
  const stop = (): void => {
    if (done) return;
    done = true;
    if (--kept.count > 0) return;
    clearInterval(kept.timer);
    if (map.get(key) === kept) map.delete(key);
    // left to expire: another client may observe the same lock
  };
  try {
    await set();
  } catch (error) {
    stop();
    throw error;
  }
  return stop;
}

/** Where a lock's events are heard: its channel, and the events marker that makes releases publish there, if any. */
export interface EventSource {
  channel: string;
  /** The events marker key (see the module's notes); none for a lock that publishes every release anyway. */
  marker?: string | undefined;
}

/** Observes `source` (marker first, then the subscription); the returned function stops both. */
async function observeSource(core: Core, source: EventSource, onMessage: (message: string) => void): Promise<() => void> {
  const unmark = source.marker === undefined ? undefined : await keepMarker(core, source.marker);
  try {
    const unobserve = await core.notifier.observe(source.channel, onMessage);
    return () => {
      unobserve();
      unmark?.();
    };
  } catch (error) {
    unmark?.();
    throw error;
  }
}

/** Checks the options of `waitUntilFree`. */
export function waitUntilFreeParams(options: unknown): { timeout: number | undefined; signal: AbortSignal | undefined } {
  const opts = checkOptions<WaitUntilFreeOptions>(options);
  checkKnownKeys(opts, WAIT_KEYS);
  return { timeout: optDuration(opts.timeout, 'options.timeout', 0), signal: optSignal(opts.signal, 'options.signal') };
}

/**
 * Resolves true once `busyFor()` reports the resource free (`null`) or a message on `source` that `freeOn` accepts is
 * heard (it was free then, even if taken again since), false when `timeout` passes first (the last look is made at the
 * deadline). `busyFor()` returns `null` when free, else the ms until it may become free without a message (the
 * holder's lease; -1: wait for a message only). Between looks it sleeps until a message or that time; a message
 * `freeOn` does not accept only makes it look again. `source` is a channel name (every message means free), or an
 * {@link EventSource}.
 */
export async function waitUntilFree(
  core: Core,
  source: string | EventSource,
  busyFor: () => Promise<number | null>,
  timeout: number | undefined,
  signal: AbortSignal | undefined,
  freeOn: (message: string) => boolean = () => true,
): Promise<boolean> {
  const deadline = timeout === undefined ? Infinity : now() + timeout;
  let heard = false;
  /** A message came since the last look began. */
  let poked: boolean;
  let wake: (() => void) | undefined;
  let unobserve: (() => void) | undefined;
  let polls = 0;
  try {
    for (;;) {
      signal?.throwIfAborted();
      core.assertOpen();
      poked = false;
      const left = await busyFor();
      if (left === null) return true;
      if (now() >= deadline) return false;
      if (!unobserve) {
        unobserve = await observeSource(core, typeof source === 'string' ? { channel: source } : source, (message) => {
          if (freeOn(message)) heard = true;
          poked = true;
          wake?.();
        });
        continue; // subscribed: look once more, so a release before the subscription is not missed
      }
      // A release message means the lock was free when it was sent, even if someone took it again since.
      if (heard) return true;
      if (poked) continue; // something changed while looking: look again
      const poll = core.store.polling ? pauseAfter(POLL_BACKOFF, ++polls) : Infinity; // a store that cannot wake: poll
      const ms = Math.min(left < 0 ? Infinity : Math.max(1, left), deadline - now(), poll);
      await sleepUntilWoken(ms, signal, (w) => (wake = w));
      wake = undefined;
      if (heard) return true;
    }
  } finally {
    unobserve?.();
  }
}

/** Sleeps `ms` (`Infinity`: no limit) or until the function handed to `setWake` is called; rejects when `signal` aborts. */
export function sleepUntilWoken(ms: number, signal: AbortSignal | undefined, setWake: (wake: () => void) => void): Promise<void> {
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
    // aborted while it looked: the listener below would never fire
    if (signal?.aborted) return reject(signal.reason);
    setWake(done);
    if (Number.isFinite(ms)) {
      timer = setTimeout(done, Math.max(0, ms));
      timer.unref();
    }
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}

/**
 * Calls `listener` for every release published on `source` until the returned function is called; resolves once
 * subscribed (no release after that is missed while the subscriber connection is up). `parse` reads a message
 * (`undefined`: not a release); by default `a` is a force-unlock and anything else a release.
 */
export async function onRelease(
  core: Core,
  name: string,
  source: string | EventSource,
  listener: unknown,
  parse: (message: string) => Omit<ReleaseEvent, 'name'> | undefined = (message) => ({ kind: message === 'a' ? 'force-unlock' : 'release' }),
): Promise<() => void> {
  const fn = optFunction<(event: ReleaseEvent) => void>(listener, 'listener');
  if (!fn) throw new TypeError('listener must be a function, got undefined');
  core.assertOpen();
  // lock/release publishes '1' (one waiter per process), lock/force-unlock 'a' (all of them)
  return observeSource(core, typeof source === 'string' ? { channel: source } : source, (message) => {
    const event = parse(message);
    if (event) fn({ name, ...event });
  });
}

/**
 * The cache-stampede guard: `getOrLoad(key, loader)`. On a miss one caller across every instance runs the
 * loader; the others wait for its result (woken by pub/sub) and read it from Redis instead of hitting the database.
 *
 * In Redis: the value (`:cv`), a load lock with a watchdog lease (`:cl`), and the last failed load (`:ce`), which only
 * the callers that waited for that very load read: a failure is not cached unless `errorTtl` asks for it.
 *
 * @module
 */
import type { Core } from '../core.js';
import { AcquireTimeoutError, LoadFailedError, type RemoteErrorInfo } from '../errors.js';
import { now } from '../internal/clock.js';
import { Lease } from '../internal/lease.js';
import { checkKnownKeys, checkName, checkOptions, optDuration, optSignal } from '../internal/validate.js';
import { waitFor } from '../internal/wait.js';
import { CACHE_CLAIM } from '../lua/codes.js';
import { scripts } from '../lua/scripts.gen.js';

/** Turns values into strings for Redis and back. */
export interface Codec<T = unknown> {
  /** A string for Redis. Throwing fails the load like a loader error. */
  encode(value: T): string;
  /** The value back. */
  decode(text: string): T;
}

/** `JSON.stringify` / `JSON.parse`. `undefined` cannot be cached (use `null`). */
export const jsonCodec: Codec = {
  encode(value) {
    const text = JSON.stringify(value);
    if (text === undefined) throw new TypeError('jsonCodec cannot encode undefined (or a function or symbol); return null instead');
    return text;
  },
  decode: (text) => JSON.parse(text) as unknown,
};

/** Options of {@link CacheLoader} (defaults for its calls). */
export interface CacheLoaderOptions<T = unknown> {
  /**
   * How values are stored.
   * @default jsonCodec
   */
  codec?: Codec<T>;
  /** Default `ttl` of the calls, in ms. @default none: each call must give `ttl` */
  ttl?: number;
  /**
   * Default `timeout` of the calls: how long a caller waits for another caller's load, in ms.
   * @default 30000
   */
  timeout?: number;
  /**
   * The load lock's lease, in ms: renewed every third of it while the loader runs, so a crashed loader frees the load
   * within it and a waiter takes over. Keep it below `timeout`.
   * @default 10000
   */
  lease?: number;
}

const LOADER_KEYS = ['codec', 'ttl', 'timeout', 'lease'] as const;

/** Options of {@link CacheLoader.getOrLoad}. */
export interface GetOrLoadOptions {
  /** How long a loaded value stays cached, in ms. @default the loader's `ttl` (required if it has none) */
  ttl?: number;
  /**
   * Cache a loader's failure for this long, in ms: calls in that window fail at once with `LoadFailedError` instead
   * of loading again. @default 0: a failure reaches the callers waiting for that load, and the next call loads again
   */
  errorTtl?: number;
  /**
   * How long to wait for another caller's load, in ms; then the call fails with `AcquireTimeoutError`.
   * A loader that crashed frees the load within the loader's `lease` (10 s), and a waiter takes it over.
   * @default the loader's `timeout` (30000)
   */
  timeout?: number;
  /** Aborts waiting (rejects with `signal.reason`); passed on to the loader if this caller loads. */
  signal?: AbortSignal;
}

const CALL_KEYS = ['ttl', 'errorTtl', 'timeout', 'signal'] as const;

/** What a loader receives. */
export interface LoadContext {
  /** The cache key. */
  key: string;
  /**
   * Aborts if the load lock is lost (reason: `LockLostError`: its renewal failed, another caller may load too) or the
   * caller's own signal aborts.
   */
  signal: AbortSignal;
}

/** Reads the value from its source (the database) on a miss. */
export type Loader<V> = (context: LoadContext) => Promise<V> | V;

type Claim = { kind: 'hit'; text: string } | { kind: 'load' };

/**
 * A cache whose misses are loaded once across the cluster. Get one from `holdfast.cacheLoader(options)`.
 *
 * @example
 * ```ts
 * const cache = holdfast.cacheLoader({ ttl: 60_000 });
 * const product = await cache.getOrLoad(`product:${id}`, () => db.products.find(id));
 * ```
 */
export class CacheLoader<T = unknown> {
  readonly #core: Core;
  readonly #codec: Codec<T>;
  readonly #ttl: number | undefined;
  readonly #timeout: number;
  readonly #lease: number;

  /** @internal */
  constructor(core: Core, options?: CacheLoaderOptions<T>) {
    const opts = checkOptions<CacheLoaderOptions<T>>(options);
    checkKnownKeys(opts, LOADER_KEYS);
    const codec = opts.codec ?? (jsonCodec as Codec<T>);
    if (typeof codec !== 'object' || codec === null || typeof codec.encode !== 'function' || typeof codec.decode !== 'function') {
      throw new TypeError('options.codec must be an object with encode(value) and decode(text) functions');
    }
    this.#core = core;
    this.#codec = codec;
    this.#ttl = optDuration(opts.ttl, 'options.ttl');
    this.#timeout = optDuration(opts.timeout, 'options.timeout', 0) ?? 30_000;
    this.#lease = optDuration(opts.lease, 'options.lease', 30) ?? 10_000;
  }

  /**
   * The cached value of `key`; on a miss, the value `loader` returns, loaded by one caller across every instance and
   * stored for `ttl` ms while the other callers wait for it.
   * @throws the loader's own error, in the caller that ran it
   * @throws {LoadFailedError} in the callers that waited for a load that failed (or read a failure cached by `errorTtl`)
   * @throws {AcquireTimeoutError} when another caller's load takes longer than `timeout`
   */
  async getOrLoad<V extends T>(key: string, loader: Loader<V>, options?: GetOrLoadOptions): Promise<V> {
    checkName(key, 'key');
    if (typeof loader !== 'function') throw new TypeError(`loader must be a function, got ${typeof loader}`);
    const opts = checkOptions<GetOrLoadOptions>(options);
    checkKnownKeys(opts, CALL_KEYS);
    const ttl = optDuration(opts.ttl, 'options.ttl') ?? this.#ttl;
    if (ttl === undefined) throw new TypeError('options.ttl is required (or give the cache loader a default ttl)');
    const errorTtl = optDuration(opts.errorTtl, 'options.errorTtl', 0) ?? 0;
    const timeout = optDuration(opts.timeout, 'options.timeout', 0) ?? this.#timeout;
    const signal = optSignal(opts.signal, 'options.signal');
    this.#core.assertOpen();

    const core = this.#core;
    const keys = [core.keys.cacheValue(key), core.keys.cacheLoad(key), core.keys.cacheError(key)];
    const owner = core.newOwner();
    const leaseMs = this.#lease;
    let seen = '';
    let sentAt = 0;
    const claim = await waitFor<Claim>(core, {
      name: key,
      channel: core.keys.cacheChannel(key),
      timeout,
      signal,
      attempt: async (budget) => {
        sentAt = now();
        const reply = await core.run(scripts['cache/claim'], keys, [owner, leaseMs, seen], budget);
        switch (reply[0]) {
          case CACHE_CLAIM.HIT:
            return { done: true, value: { kind: 'hit', text: String(reply[1]) } };
          case CACHE_CLAIM.FAILED:
            throw new LoadFailedError(key, parseRemote(String(reply[1])));
          case CACHE_CLAIM.LOAD:
            return { done: true, value: { kind: 'load' } };
          default: {
            // CACHE_CLAIM.BUSY: another load runs
            seen = reply[2] ?? '';
            const pttl = Number(reply[1] ?? -2);
            return { done: false, retryInMs: pttl < 0 ? 0 : pttl };
          }
        }
      },
    });
    if (!claim) throw new AcquireTimeoutError(key, 0); // timeout 0: a load was in progress and this call does not wait
    if (claim.kind === 'hit') return this.#decode(key, claim.text) as V;
    return this.#load(key, keys, owner, leaseMs, sentAt, loader, ttl, errorTtl, signal);
  }

  async #load<V extends T>(
    key: string,
    keys: string[],
    owner: string,
    leaseMs: number,
    sentAt: number,
    loader: Loader<V>,
    ttl: number,
    errorTtl: number,
    signal: AbortSignal | undefined,
  ): Promise<V> {
    const core = this.#core;
    const channel = core.keys.cacheChannel(key);
    // The load lock is kept by the watchdog while the loader runs; a crashed loader frees it within the lease.
    const lease = new Lease({
      name: `cache:${key}`,
      leaseMs,
      renewEveryMs: Math.max(10, Math.floor(leaseMs / 3)),
      sentAt,
      renew: async (ms) => (await core.run(scripts['owned/renew'], [keys[1] as string], [owner, ms])) === 1,
      onLost: () => {
        /* the loader's signal says it */
      },
    });
    let encoded: string;
    let value: V;
    try {
      value = await loader({ key, signal: signal ? AbortSignal.any([lease.signal, signal]) : lease.signal });
      encoded = 'v' + this.#codec.encode(value);
    } catch (error) {
      lease.stop();
      await core
        .run(scripts['cache/fail'], keys, [owner, JSON.stringify(remoteOf(error)), leaseMs, channel, errorTtl])
        .catch(() => {
          /* Redis is unreachable: waiters see the load lock lapse and load themselves */
        });
      throw error;
    }
    lease.stop();
    await core.run(scripts['cache/fill'], [keys[0] as string, keys[1] as string], [owner, encoded, ttl, channel]);
    return value;
  }

  /** The cached value of `key`, or `undefined` on a miss. Loads nothing. */
  async get(key: string): Promise<T | undefined> {
    checkName(key, 'key');
    this.#core.assertOpen();
    const text = await this.#core.run(scripts['cache/get'], [this.#core.keys.cacheValue(key)], []);
    return text === null || text === undefined ? undefined : this.#decode(key, String(text));
  }

  /** Stores `value` under `key` for `ttl` ms (e.g. after a write to the source), and wakes callers waiting for a load. */
  async set(key: string, value: T, options?: { ttl?: number }): Promise<void> {
    checkName(key, 'key');
    const opts = checkOptions<{ ttl?: number }>(options);
    checkKnownKeys(opts, ['ttl']);
    const ttl = optDuration(opts.ttl, 'options.ttl') ?? this.#ttl;
    if (ttl === undefined) throw new TypeError('options.ttl is required (or give the cache loader a default ttl)');
    this.#core.assertOpen();
    const core = this.#core;
    // Owner '' matches no load lock: a running load keeps its lock and will overwrite with what it read.
    await core.run(scripts['cache/fill'], [core.keys.cacheValue(key), core.keys.cacheLoad(key)], ['', 'v' + this.#codec.encode(value), ttl, core.keys.cacheChannel(key)]);
  }

  /** Removes the cached value of `key` (the next `getOrLoad` loads again). True if there was one. */
  async delete(key: string): Promise<boolean> {
    checkName(key, 'key');
    this.#core.assertOpen();
    return (await this.#core.run(scripts['cache/delete'], [this.#core.keys.cacheValue(key)], [])) === 1;
  }

  #decode(key: string, text: string): T {
    if (text.startsWith('e')) throw new LoadFailedError(key, parseRemote(text.slice(1)));
    return this.#codec.decode(text.slice(1));
  }
}

function remoteOf(error: unknown): RemoteErrorInfo {
  if (error instanceof Error) {
    const code = (error as { code?: unknown }).code;
    return { name: error.name, message: error.message, ...(typeof code === 'string' || typeof code === 'number' ? { code } : {}) };
  }
  return { name: 'Error', message: String(error) };
}

function parseRemote(text: string): RemoteErrorInfo {
  try {
    const parsed = JSON.parse(text) as Partial<RemoteErrorInfo>;
    return {
      name: typeof parsed.name === 'string' ? parsed.name : 'Error',
      message: typeof parsed.message === 'string' ? parsed.message : '',
      ...(typeof parsed.code === 'string' || typeof parsed.code === 'number' ? { code: parsed.code } : {}),
    };
  } catch {
    return { name: 'Error', message: text };
  }
}

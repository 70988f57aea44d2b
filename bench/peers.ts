/**
 * Every lock the benchmark runs, behind one small interface: holdfast's Lock and FairLock, the raw floor and the
 * Node peers, each at its default settings and tuned to its fastest retry settings. One Redis connection per process
 * (as an application would have), shared by all of that process' contenders.
 */
import { createRequire } from 'node:module';
import { Redis } from 'ioredis';
import { Redlock as SesameRedlock } from '@sesamecare-oss/redlock';
import { Mutex } from 'redis-semaphore';
import { createLock, IoredisAdapter } from 'redlock-universal';
import { Holdfast } from './holdfast.js';

/** Releases what `acquire` got. */
export type Release = () => Promise<unknown>;

/** One contender's way to take the lock (it retries until it has it or `signal` aborts). */
export type Acquire = (signal: AbortSignal) => Promise<Release>;

/** A library set up in one process: a contender factory and a teardown. */
export interface Setup {
  contender(): Acquire;
  close(): Promise<void>;
}

export interface Subject {
  id: string;
  /** What the table says about its settings. */
  settings: string;
  /** Only in the uncontended table. */
  uncontendedOnly?: boolean;
  setup(url: string, key: string): Promise<Setup>;
}

/** A lease long enough for any hold in the benchmark. */
const TTL = 10_000;

function connect(url: string): Redis {
  const redis = new Redis(url, { maxRetriesPerRequest: 1 });
  redis.on('error', () => {});
  return redis;
}

const require = createRequire(import.meta.url);

interface RedlockV4Lock {
  unlock(): Promise<unknown>;
}
type RedlockV4 = new (clients: unknown[], settings?: Record<string, number>) => {
  lock(resource: string, ttl: number): Promise<RedlockV4Lock>;
  on(event: string, listener: () => void): void;
};

const CAD = "if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) else return 0 end";

/** Retries until the signal aborts: the peers give up after their retry budget, a contender does not. */
async function persist<T>(signal: AbortSignal, attempt: () => Promise<T>, failures: { n: number }): Promise<T> {
  for (;;) {
    signal.throwIfAborted();
    try {
      return await attempt();
    } catch (error) {
      if (signal.aborted) throw error;
      failures.n++;
    }
  }
}

/** Counts acquisitions that gave up (the caller's loop tries again). */
export const failures = { n: 0 };

export const subjects: Subject[] = [
  {
    id: 'floor',
    settings: 'SET NX PX + EVALSHA compare-and-delete, one connection',
    uncontendedOnly: true,
    async setup(url, key) {
      const redis = connect(url);
      const sha = (await redis.script('LOAD', CAD)) as string;
      let n = 0;
      return {
        contender: () => async () => {
          const value = `v${++n}`;
          if ((await redis.set(key, value, 'PX', TTL, 'NX')) !== 'OK') throw new Error('floor: key busy');
          return () => redis.evalsha(sha, 1, key, value);
        },
        close: async () => void redis.disconnect(),
      };
    },
  },
  ...(['lock', 'fairLock'] as const).map(
    (kind): Subject => ({
      id: kind === 'lock' ? 'holdfast Lock' : 'holdfast FairLock',
      settings: 'defaults (watchdog lease 30 s, pub/sub wake-up)',
      async setup(url, key) {
        const redis = connect(url);
        const holdfast = new Holdfast({ redis, prefix: 'bench:' });
        const lock = kind === 'lock' ? holdfast.lock(key) : holdfast.fairLock(key);
        return {
          contender: () => async (signal) => {
            const held = await lock.acquire({ signal });
            return () => held.release();
          },
          close: async () => {
            await holdfast.close();
            redis.disconnect();
          },
        };
      },
    }),
  ),
  ...[
    { tuned: false, settings: 'defaults: retryCount 10, retryDelay 200 ms, jitter 100 ms' },
    { tuned: true, settings: 'tuned: retryCount -1, retryDelay 1 ms, jitter 0' },
  ].map(
    ({ tuned, settings }): Subject => ({
      id: `redlock 4${tuned ? ' tuned' : ''}`,
      settings,
      async setup(url, key) {
        const Redlock = require('redlock') as RedlockV4;
        const redis = connect(url);
        const redlock = new Redlock([redis], tuned ? { retryCount: -1, retryDelay: 1, retryJitter: 0 } : {});
        redlock.on('clientError', () => {});
        return {
          contender: () => async (signal) => {
            const lock = await persist(signal, () => redlock.lock(key, TTL), failures);
            return () => lock.unlock();
          },
          close: async () => void redis.disconnect(),
        };
      },
    }),
  ),
  ...[
    { tuned: false, settings: 'defaults: retryCount 10, retryDelay 200 ms, jitter 100 ms' },
    { tuned: true, settings: 'tuned: retryCount -1, retryDelay 1 ms, jitter 0' },
  ].map(
    ({ tuned, settings }): Subject => ({
      id: `@sesamecare-oss/redlock${tuned ? ' tuned' : ''}`,
      settings,
      async setup(url, key) {
        const redis = connect(url);
        const redlock = new SesameRedlock([redis], tuned ? { retryCount: -1, retryDelay: 1, retryJitter: 0 } : {});
        redlock.on('error', () => {});
        return {
          contender: () => async (signal) => {
            const lock = await persist(signal, () => redlock.acquire([key], TTL), failures);
            return () => lock.release();
          },
          close: async () => void redis.disconnect(),
        };
      },
    }),
  ),
  ...[
    { tuned: false, settings: 'defaults: retryInterval 10 ms, acquireTimeout 10 s' },
    { tuned: true, settings: 'tuned: retryInterval 1 ms' },
  ].map(
    ({ tuned, settings }): Subject => ({
      id: `redis-semaphore${tuned ? ' tuned' : ''}`,
      settings,
      async setup(url, key) {
        const redis = connect(url);
        return {
          contender: () => {
            const mutex = new Mutex(redis, key, { lockTimeout: TTL, ...(tuned ? { retryInterval: 1 } : {}) });
            return async (signal) => {
              await persist(signal, () => mutex.acquire(), failures);
              return () => mutex.release();
            };
          },
          close: async () => void redis.disconnect(),
        };
      },
    }),
  ),
  ...[
    { tuned: false, settings: 'defaults: retryAttempts 3, retryDelay 100 ms' },
    { tuned: true, settings: 'tuned: retryAttempts 1e9, retryDelay 1 ms' },
  ].map(
    ({ tuned, settings }): Subject => ({
      id: `redlock-universal${tuned ? ' tuned' : ''}`,
      settings,
      async setup(url, key) {
        const redis = connect(url);
        const adapter = new IoredisAdapter(redis);
        return {
          contender: () => {
            const lock = createLock({ adapter, key, ttl: TTL, ...(tuned ? { retryAttempts: 1e9, retryDelay: 1 } : {}) });
            return async (signal) => {
              const handle = await persist(signal, () => lock.acquire(), failures);
              return () => lock.release(handle);
            };
          },
          close: async () => void redis.disconnect(),
        };
      },
    }),
  ),
];

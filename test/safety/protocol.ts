/**
 * What the runner and a worker process agree on: the worker's configuration, its IPC messages, and the seeded PRNG
 * both use. (Kept apart from worker.ts, whose import starts a worker.)
 *
 * @module
 */

export interface WorkerConfig {
  id: string;
  /**
   * `holdfast-fair`: the FairLock (waiterTimeout 2 s) instead of the Lock. `redlock-semaphore`: one permit per grant of
   * a Redlock semaphore of `permits` permits.
   */
  backend: 'holdfast' | 'holdfast-fair' | 'majority' | 'redlock' | 'redlock-semaphore';
  /**
   * Grants that may run at once (a semaphore's permits). Above 1 a use touches no oracle (concurrent holders of a
   * semaphore are no violation of it), it only works `workMs`.
   * @default 1
   */
  permits?: number;
  adapter: 'ioredis' | 'node-redis';
  urls: string[];
  oracleUrl: string;
  lock: string;
  prefix: string;
  historyPath: string;
  seed: number;
  leaseMs: number;
  watchdog: boolean;
  watchdogIntervalMs: number;
  commandTimeoutMs: number;
  acquireTimeoutMs: number;
  workMs: number;
  /** Uses per grant: a random number from `usesMin` (default 1) to this. */
  usesPerGrant: number;
  usesMin?: number;
  useBudgetMs: number;
  thinkMs: number;
  /** Fixed-lease mode: extend the lease close to its end, up to this many times per grant. */
  extendNearEnd?: { times: number; earlyMs: number; lateMs: number };
  /** Gaps of the event loop longer than this are recorded as stalls. */
  stallMs: number;
}

export type WorkerMessage = { t: 'ready' } | { t: 'held'; grant: string; token: number } | { t: 'free'; grant: string } | { t: 'done' };

/** mulberry32: a small seeded PRNG, so a run can be repeated. */
export function rng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

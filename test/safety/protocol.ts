/**
 * What the runner and a worker process agree on: the worker's configuration, its IPC messages, and the seeded PRNG
 * both use. (Kept apart from worker.ts, whose import starts a worker.)
 *
 * @module
 */

/** The exclusive holdfast primitives the Cluster backend drives: `Lock`, `FairLock`, the write side of `ReadWriteLock`. */
export type LockKind = 'lock' | 'fair' | 'write';

/**
 * Many lock names instead of one. The list (a JSON array in `path`) is read as a ring; an acquisition picks one name
 * at random from a window of `window` consecutive names that moves on by `step` names every `periodMs` of the shared
 * reference clock, so every worker's window is the same at the same time (names are contended while in it), and the
 * run goes through many distinct names. The kind is picked at random from `kinds` (repeat a kind to weight it).
 */
export interface NamesConfig {
  path: string;
  window: number;
  step: number;
  periodMs: number;
  kinds: LockKind[];
}

export interface WorkerConfig {
  id: string;
  /**
   * `holdfast-fair`: the FairLock (waiterTimeout 2 s) instead of the Lock. `redlock-semaphore`: one permit per grant of
   * a Redlock semaphore of `permits` permits. `holdfast-cluster`: holdfast over a Redis Cluster client (`urls` are its
   * root nodes) on the names and kinds of `names`. `holdfast-election`: a grant is a leadership of the leader election
   * `lock` (its token the term), released by resigning.
   */
  backend: 'holdfast' | 'holdfast-fair' | 'holdfast-election' | 'majority' | 'redlock' | 'redlock-semaphore' | 'holdfast-cluster';
  /** Required by `holdfast-cluster`: the names and kinds it acquires (the history's lock is then `<kind>:<name>`). */
  names?: NamesConfig;
  /**
   * Acquire → use → release loops this process runs at once, each its own worker in the history (`<id>.<n>`); only
   * `holdfast-cluster` takes more than 1. @default 1
   */
  loops?: number;
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

/**
 * The one retry policy for transient failures (a connection error, a Redis Cluster slot in migration): the n-th pause
 * is `firstMs × 2^(n-1)`, capped at `capMs`, slept on an unref'd timer (a retry never keeps the process alive). Every
 * loop that retries takes its pauses from here; each names only where it starts and where it stops growing.
 */
import { sleep } from './sleep.js';

/** Where a retry loop's pauses start and where they stop growing. */
export interface Backoff {
  /** The first pause, in ms. */
  readonly firstMs: number;
  /** The longest pause, in ms. */
  readonly capMs: number;
}

/** A release, and a fair lock's claim of a hand-off: requests safe to send again (25, 50, 100 … 1000 ms). */
export const RELEASE_BACKOFF: Backoff = { firstMs: 25, capMs: 1000 };
/** A release given up to the background after its tries failed, until its lease runs out (100, 200 … 1000 ms). */
export const BACKGROUND_BACKOFF: Backoff = { firstMs: 100, capMs: 1000 };
/** A script a Redis Cluster redirection or a migrating slot refused, within the command's own timeout (10 … 100 ms). */
export const SCRIPT_BACKOFF: Backoff = { firstMs: 10, capMs: 100 };
/** A ZooKeeper request safe to send again (a node's delete), and a wait's read after a dropped connection (50, 100 … 1000 ms). */
export const ZOOKEEPER_BACKOFF: Backoff = { firstMs: 50, capMs: 1000 };

/**
 * A waiter whose store cannot wake it (PostgreSQL behind a transaction-mode pooler, or `listen: false`): how soon it
 * looks again, at most, after each attempt that found the primitive taken (5, 10, 20 … 200 ms).
 */
export const POLL_BACKOFF: Backoff = { firstMs: 5, capMs: 200 };
/**
 * A waiter whose grant came past its lease (replies slower than the lease, see `LateGrant`), asking again: at most a
 * few times a second while grants keep coming late (50, 100 … 1000 ms).
 */
export const LATE_GRANT_BACKOFF: Backoff = { firstMs: 50, capMs: 1000 };
/** The listening connection of a PostgreSQL store, lost: its reconnects (100, 200 … 2000 ms). */
export const LISTEN_BACKOFF: Backoff = { firstMs: 100, capMs: 2000 };
/** An election's `run()` whose campaign could not reach the store, campaigning again (100, 200 … 2000 ms). */
export const CAMPAIGN_BACKOFF: Backoff = { firstMs: 100, capMs: 2000 };
/** An election's observer whose read of the leader failed, looking again (50, 100 … 1000 ms). */
export const OBSERVE_BACKOFF: Backoff = { firstMs: 50, capMs: 1000 };
/** A scheduled job's `run-latest` tick whose claim Redis did not answer, claimed again later (500 ms, 1 s … 30 s). */
export const JOB_CLAIM_BACKOFF: Backoff = { firstMs: 500, capMs: 30_000 };

/** The pause before try `n + 1`, after `n` failed tries (n ≥ 1), in ms. */
export function pauseAfter(policy: Backoff, n: number): number {
  return Math.min(policy.capMs, policy.firstMs * 2 ** Math.max(0, n - 1));
}

/** Sleeps the pause after `n` failed tries (unref'd timer; rejects with the signal's reason when `signal` aborts). */
export function backoff(policy: Backoff, n: number, signal?: AbortSignal): Promise<void> {
  return sleep(pauseAfter(policy, n), signal);
}

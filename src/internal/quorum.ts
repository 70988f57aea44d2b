/**
 * The acquire loop of the quorum primitives (a Redlock's lock and its semaphore), written once: the option checks,
 * attempts with a pause and jitter between them, the retry budget, the caller's timeout and signal, and the hold an
 * attempt won while the Redlock was being closed. What one attempt does (the scripts on every node, the votes, the
 * validity rule) is the primitive's.
 *
 * It is not the single-Redis template's wait loop (`internal/wait.ts`): a quorum cannot be waited on by pub/sub (each
 * node would wake its waiters at another moment), and the algorithm's contract is a bounded number of attempts.
 */
import { AcquireTimeoutError, ClientClosedError, QuorumNotReachedError, type NodeResult } from '../errors.js';
import type { AcquireContext } from '../diagnostics.js';
import { now } from './clock.js';
import { sleep } from './sleep.js';
import { checkKnownKeys, checkOptions, optDuration, optSignal } from './validate.js';

/** The options `acquire()` takes on a quorum primitive (`tryAcquire()` all but `timeout`). */
const ACQUIRE_KEYS = ['timeout', 'lease', 'signal'] as const;

/** The Redlock a quorum primitive runs on: its quorum, its retry settings and whether it is closed. */
export interface QuorumHost {
  readonly quorum: number;
  readonly closed: boolean;
  /** @throws {ClientClosedError} once closed */
  assertOpen(): void;
  readonly settings: { readonly retryCount: number; readonly retryDelay: number; readonly retryJitter: number; readonly watchdogLease: number };
}

/** The checked options of one acquisition. */
export interface QuorumRun {
  /** ms to keep trying; `undefined`: the retry budget alone bounds it. */
  readonly timeout: number | undefined;
  /** The fixed lease asked for; `undefined`: the watchdog keeps `leaseMs`. */
  readonly fixedLease: number | undefined;
  readonly leaseMs: number;
  readonly signal: AbortSignal | undefined;
}

/** What one attempt came to: the hold a majority granted, or every node's answer (and why a majority still failed). */
export interface QuorumAttempt<H> {
  held: H | undefined;
  results: NodeResult[];
  detail?: string;
}

/**
 * Checks the options of `acquire()` (`single` false) or `tryAcquire()` (`single` true, which takes no `timeout`).
 * @throws {TypeError} on bad input
 */
export function quorumParams(host: QuorumHost, options: unknown, single: boolean): QuorumRun {
  const opts = checkOptions<{ timeout?: number; lease?: number; signal?: AbortSignal }>(options);
  checkKnownKeys(opts, single ? ACQUIRE_KEYS.filter((k) => k !== 'timeout') : ACQUIRE_KEYS);
  const timeout = optDuration(opts.timeout, 'options.timeout', 0);
  const fixedLease = optDuration(opts.lease, 'options.lease', 10);
  const signal = optSignal(opts.signal, 'options.signal');
  host.assertOpen();
  return { timeout, fixedLease, leaseMs: fixedLease ?? host.settings.watchdogLease, signal };
}

/**
 * Attempts until one wins a hold, or the retry budget (`retryCount + 1` attempts) or `run.timeout` runs out.
 * `single`: one attempt, `null` when a majority answered but did not grant.
 * @throws {QuorumNotReachedError} when the attempts ran out (the last one's per-node results), or, for a single
 *   attempt, when too few nodes answered to judge
 * @throws {AcquireTimeoutError} when `run.timeout` runs out first (its `cause`: the last attempt's failure)
 * @throws {ClientClosedError} when the host closed while an attempt ran (the hold it won is given back)
 * @throws the signal's reason when `run.signal` aborts
 */
export async function quorumAcquire<H extends { readonly hold: { closeHold(): Promise<void> } }>(
  host: QuorumHost,
  name: string,
  run: QuorumRun,
  single: boolean,
  trace: AcquireContext | undefined,
  attempt: () => Promise<QuorumAttempt<H>>,
): Promise<H | null> {
  const { timeout, signal } = run;
  const { retryCount, retryDelay, retryJitter } = host.settings;
  const deadline = timeout === undefined ? Infinity : now() + timeout;
  for (let n = 1; ; n++) {
    signal?.throwIfAborted();
    host.assertOpen();
    if (trace) trace.attempts++;
    const result = await attempt();
    if (result.held) {
      if (!host.closed) return result.held;
      // closed while the attempt ran: close() did not see this hold, so undo it here
      await result.held.hold.closeHold();
      throw new ClientClosedError();
    }
    const answered = result.results.filter((r) => r.status === 'acquired' || r.status === 'busy').length;
    const failure = new QuorumNotReachedError(name, 'acquire', host.quorum, result.results, n, result.detail === undefined ? undefined : { detail: result.detail });
    if (single) {
      if (answered >= host.quorum) return null;
      throw failure;
    }
    if (n > retryCount) throw failure;
    // The time is up only after an attempt made at (or after) the deadline: the last pause ends at the deadline.
    const left = deadline - now();
    if (left <= 0) throw new AcquireTimeoutError(name, timeout ?? 0, { cause: failure });
    await sleep(Math.min(retryDelay + Math.floor(Math.random() * retryJitter), Math.ceil(left)), signal);
  }
}

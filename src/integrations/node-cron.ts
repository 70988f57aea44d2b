/**
 * `holdfast/node-cron`: a node-cron (≥ 4.4) `RunCoordinator` that runs each fire of a `distributed` task on one
 * instance, with ShedLock's `lockAtMostFor` (node-cron's `distributedLease`) and `lockAtLeastFor`.
 *
 * @example
 * ```ts
 * import cron from 'node-cron';
 * import { holdfastRunCoordinator } from 'holdfast/node-cron';
 *
 * cron.setRunCoordinator(holdfastRunCoordinator(holdfast, { lockAtLeastFor: 5_000 }));
 * cron.schedule('0 * * * *', sendDigest, { name: 'hourly-digest', distributed: true, distributedLease: 10 * 60_000 });
 * ```
 *
 * @module
 */
import { isHoldfastError } from '../errors.js';
import { checkKnownKeys, checkOptions, optDuration } from '../internal/validate.js';
import type { JobClaim, Scheduler } from '../recipes/scheduler.js';
import { schedulerOf, type ClaimSource } from './common.js';

/** Options of {@link holdfastRunCoordinator}. */
export interface RunCoordinatorOptions {
  /**
   * How long, in ms, a fire keeps its task locked at least after it started, even when it finished sooner: an
   * instance whose clock runs late cannot run the same fire again. Capped at the task's `distributedLease`.
   * @default 0
   */
  lockAtLeastFor?: number;
}

/** The node-cron `RunCoordinator` interface (structurally: no type import of node-cron needed). */
export interface HoldfastRunCoordinator {
  /**
   * Claims the fire `key` (`<task name>:<ISO time of the fire>`, as node-cron builds it) for this instance: true when
   * it won it. `ttlMs` (the task's `distributedLease`, default 30 s) is the claim's `lockAtMostFor`: a crashed
   * instance's claim frees the task then.
   * @throws {RedisConnectionError} when Redis did not answer: node-cron then skips the fire (fail-closed). A fire after
   * the holdfast client was closed is skipped too, and its `ClientClosedError` goes to the scheduler's `onError`
   * (`jobError`) instead.
   */
  shouldRun(key: string, ttlMs: number): Promise<boolean>;
  /** Finishes the claim of `key`: the task stays locked until `lockAtLeastFor` after the fire started. */
  onComplete(key: string): Promise<void>;
  /** The scheduler the claims go through (its `jobError`/`skip` events, its `fingerprint`). */
  readonly scheduler: Scheduler;
}

/** True for the error of a claim made after the holdfast client was closed or its scheduler stopped. */
function closed(error: unknown): boolean {
  return (isHoldfastError(error) && error.code === 'CLIENT_CLOSED') || (error instanceof Error && error.message === 'the scheduler was stopped');
}

/** `name:2026-01-01T00:00:00.000Z`: node-cron's coordination key of one fire. */
const KEY = /^(.+):(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?Z)$/;

/**
 * A node-cron `RunCoordinator` on holdfast: give it to `cron.setRunCoordinator(...)` or to a task's
 * `runCoordinator` option, with `distributed: true` and a `name` on the task. Each fire then runs on one instance
 * of those that schedule the task.
 * @param source a holdfast client, or one of its schedulers (to listen to its events)
 * @throws {TypeError | RangeError} for a bad source or option
 */
export function holdfastRunCoordinator(source: ClaimSource, options?: RunCoordinatorOptions): HoldfastRunCoordinator {
  const opts = checkOptions<RunCoordinatorOptions>(options);
  checkKnownKeys(opts, ['lockAtLeastFor']);
  const lockAtLeastFor = optDuration(opts.lockAtLeastFor, 'options.lockAtLeastFor', 0) ?? 0;
  const scheduler = schedulerOf(source, {}, 'source');
  const claims = new Map<string, JobClaim>();
  return {
    scheduler,
    async shouldRun(key, ttlMs) {
      if (typeof key !== 'string') throw new TypeError(`key must be a string, got ${typeof key}`);
      const lockAtMostFor = optDuration(ttlMs, 'ttlMs') ?? 30_000;
      const match = KEY.exec(key);
      const name = match?.[1] ?? key;
      // A key without a time (another caller): the fire is named by the second it came in, like cron's.
      const tick = match?.[2] ? Date.parse(match[2]) : Math.floor(Date.now() / 1000) * 1000;
      if (claims.has(key)) return false; // the same fire twice in this process (two tasks of one name)
      let claim: JobClaim | null;
      try {
        claim = await scheduler.claim(name, tick, { lockAtMostFor, lockAtLeastFor: Math.min(lockAtLeastFor, lockAtMostFor), schedule: 'node-cron' });
      } catch (error) {
        if (!closed(error)) throw error;
        // the holdfast client was closed (or the scheduler stopped) before the task: reported, and the fire skipped
        scheduler.report(error, { name, tick: new Date(tick), phase: 'claim' });
        return false;
      }
      if (claim) claims.set(key, claim);
      return claim !== null;
    },
    async onComplete(key) {
      const claim = claims.get(key);
      if (!claim) return;
      claims.delete(key);
      await claim.finish();
    },
  };
}

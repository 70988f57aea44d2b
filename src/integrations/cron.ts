/**
 * `holdfast/cron`: an `onTick` for the `cron` package's `CronJob` that runs each tick on one instance of those that
 * schedule the same job name, with ShedLock's `lockAtMostFor` / `lockAtLeastFor`.
 *
 * @example
 * ```ts
 * import { CronJob } from 'cron';
 * import { runOnce } from 'holdfast/cron';
 *
 * CronJob.from({
 *   cronTime: '0 *\/5 * * * *',
 *   onTick: runOnce(holdfast, 'sync-prices', async ({ signal }) => syncPrices({ signal }), { lockAtMostFor: 4 * 60_000 }),
 *   start: true,
 *   waitForCompletion: true,
 * });
 * ```
 *
 * @module
 */
import { checkKnownKeys, checkName, checkOptions, optDuration, optFunction } from '../internal/validate.js';
import type { JobFunction, JobRunInfo, Scheduler } from '../recipes/scheduler.js';
import { schedulerOf, tickOfFire, type ClaimSource } from './common.js';

/** Options of {@link runOnce}. */
export interface CronRunOnceOptions {
  /**
   * How long, in ms, a tick keeps the job locked at most: a crashed instance's run frees it then, and a run still
   * going is told through its `signal` just before.
   * @default the scheduler's (60000)
   */
  lockAtMostFor?: number;
  /**
   * How long, in ms, a tick keeps the job locked at least after it started: an instance whose clock runs late, or
   * whose timer fired late, cannot run the same tick again. Must not exceed `lockAtMostFor`.
   * @default the scheduler's (0)
   */
  lockAtLeastFor?: number;
  /**
   * Called when the job throws or Redis fails to claim or finish a tick (the scheduler made for a holdfast client
   * `source`; a scheduler you pass keeps its own `onError` / `jobError`).
   * @default undefined (`console.error`)
   */
  onError?: (error: unknown, info: JobRunInfo) => void;
}

/** An `onTick` made by {@link runOnce}: resolves when the tick is done here (run, skipped or failed). */
export type RunOnceTick = (this: unknown, onComplete?: unknown) => Promise<void>;

/**
 * Wraps `fn` as a `CronJob` `onTick` that runs each tick once across instances: the tick (the whole second it fired
 * in) is claimed in Redis first, and only the instance that wins it runs `fn`. A throwing `fn`, and a tick that
 * fires after the holdfast client was closed, are reported through `onError`, never thrown into `cron`.
 * @param source a holdfast client, or one of its schedulers
 * @param name the job's name: the same on every instance
 * @throws {TypeError | RangeError} for a bad source, name, function or option
 */
export function runOnce(source: ClaimSource, name: string, fn: JobFunction, options?: CronRunOnceOptions): RunOnceTick {
  checkName(name);
  if (typeof fn !== 'function') throw new TypeError(`fn must be a function, got ${typeof fn}`);
  const opts = checkOptions<CronRunOnceOptions>(options);
  checkKnownKeys(opts, ['lockAtMostFor', 'lockAtLeastFor', 'onError']);
  const lockAtMostFor = optDuration(opts.lockAtMostFor, 'options.lockAtMostFor');
  const lockAtLeastFor = optDuration(opts.lockAtLeastFor, 'options.lockAtLeastFor', 0);
  const onError = optFunction<CronRunOnceOptions['onError']>(opts.onError, 'options.onError');
  const scheduler: Scheduler = schedulerOf(source, onError ? { onError } : {}, 'source');
  const locks = { ...(lockAtMostFor === undefined ? {} : { lockAtMostFor }), ...(lockAtLeastFor === undefined ? {} : { lockAtLeastFor }) };
  if (lockAtLeastFor !== undefined && lockAtLeastFor > (lockAtMostFor ?? Infinity)) {
    throw new RangeError(`options.lockAtLeastFor (${lockAtLeastFor}) must not exceed options.lockAtMostFor (${lockAtMostFor})`);
  }
  return async function onTick(this: unknown) {
    const tick = tickOfFire();
    // `this` is the CronJob unless the job was given a context: its expression is shown by `holdfast jobs`
    const job = this as { cronTime?: { source?: unknown } } | undefined;
    const source = job?.cronTime?.source;
    try {
      await scheduler.run(name, tick, fn, { ...locks, schedule: typeof source === 'string' ? source : 'cron' });
    } catch (error) {
      // the holdfast client was closed (or the scheduler stopped) before the CronJob: reported, never thrown into cron
      scheduler.report(error, { name, tick: new Date(tick), phase: 'claim' });
    }
  };
}

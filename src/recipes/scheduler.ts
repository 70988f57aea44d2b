/**
 * Scheduled jobs that run once per tick across any number of instances, with ShedLock's `lockAtMostFor` /
 * `lockAtLeastFor`. Every instance computes the same ticks from the cron expression (croner parses it); at a tick
 * each one asks Redis, in one script, to claim that tick: the first claim wins, the others see the tick recorded
 * (or the lock still held) and skip.
 *
 * The same claim serves the adapters for node-cron, `cron` and `@nestjs/schedule` (`holdfast/node-cron`,
 * `holdfast/cron`, `holdfast/nestjs`) through {@link Scheduler.claim} and {@link Scheduler.run}.
 *
 * @module
 */
import { EventEmitter } from 'node:events';
import { createRequire } from 'node:module';
import type { Cron } from 'croner';
import { JOB_CLAIM_BACKOFF, pauseAfter } from '../internal/backoff.js';
import { fingerprint } from '../internal/fingerprint.js';
import type { Core } from '../core.js';
import { ScriptError } from '../errors.js';
import { now } from '../internal/clock.js';
import { Lease } from '../internal/lease.js';
import { checkKnownKeys, checkName, checkOptions, optBoolean, optDuration, optFunction } from '../internal/validate.js';
import type { JobInfo } from './job-info.js';
import { scripts } from '../lua/scripts.gen.js';

let croner: typeof import('croner') | undefined;

/**
 * croner, loaded on the first {@link Scheduler.schedule}: only holdfast's own scheduler parses cron expressions, so
 * croner is an optional peer dependency that nothing else loads.
 * @throws {Error} when croner is not installed, saying what to install
 */
function cronClass(): typeof Cron {
  if (croner === undefined) {
    try {
      croner = createRequire(import.meta.url)('croner') as typeof import('croner');
    } catch (error) {
      throw new Error('scheduler.schedule() parses cron expressions with croner, which is not installed: run `npm install croner`', { cause: error });
    }
  }
  return croner.Cron;
}

/** What to do with ticks missed while this instance was blocked or Redis was unreachable. */
export type MissedTicks = 'skip' | 'run-latest';

/** Options of {@link Scheduler} (defaults for its jobs). */
export interface SchedulerOptions {
  /**
   * Default `lockAtMostFor` of the jobs, in ms: how long a run keeps its job locked at most, so a crashed
   * instance's run frees the job then. Set it well above the longest run you expect: a run still going then is told
   * through its `signal`, and the next tick may start on another instance.
   * @default 60000
   */
  lockAtMostFor?: number;
  /**
   * Default `lockAtLeastFor` of the jobs, in ms: a run keeps its job locked at least this long after it started,
   * even when it finishes sooner, so an instance whose clock runs late cannot run it again.
   * @default 0
   */
  lockAtLeastFor?: number;
  /**
   * The IANA timezone the cron expressions are read in (e.g. `"UTC"`, `"Europe/Berlin"`). Give every instance the
   * same one: ticks are identified by their instant, so instances in different zones would compute different ticks.
   * @default the process' local timezone
   */
  timezone?: string;
  /**
   * Ticks missed while this instance was blocked (its timer fired more than `missedTickTolerance` late: a long GC
   * pause, a blocked event loop, a suspended VM) or while Redis was unreachable (the claim failed):
   *
   * - `'skip'`: skip them all; the job runs again at its next tick.
   * - `'run-latest'`: run the latest missed tick once, as soon as this instance can: at once after a block; after a
   *   failed claim, by claiming it again (every 0.5 s, doubling up to 30 s) until Redis answers or the next tick is
   *   due. Across instances it still runs at most once (the tick's claim decides).
   * @default 'skip'
   */
  missedTicks?: MissedTicks;
  /**
   * How late, in ms, a tick's timer may fire and still run as an ordinary tick; later, the tick counts as missed
   * (see `missedTicks`).
   * @default 1000
   */
  missedTickTolerance?: number;
  /**
   * Keep the process alive while jobs are scheduled. By default the timers are unref'd: your Redis connection
   * usually keeps the process alive anyway, and closing it lets the process exit.
   * @default false
   */
  keepAlive?: boolean;
  /**
   * Called for every failed run (the job threw) and every tick that could not be claimed or finished because Redis
   * failed. The schedule goes on. Also emitted as the `jobError` event; with neither, errors go to `console.error`.
   * @default undefined (the `jobError` event, else `console.error`)
   */
  onError?: (error: unknown, info: JobRunInfo) => void;
}

const SCHEDULER_KEYS = ['lockAtMostFor', 'lockAtLeastFor', 'timezone', 'missedTicks', 'missedTickTolerance', 'keepAlive', 'onError'] as const;

/** Options of one job (override the scheduler's). */
export interface JobOptions {
  /** See {@link SchedulerOptions.lockAtMostFor}. @default the scheduler's (60000) */
  lockAtMostFor?: number;
  /** See {@link SchedulerOptions.lockAtLeastFor}. Must not exceed `lockAtMostFor`. @default the scheduler's (0) */
  lockAtLeastFor?: number;
  /** See {@link SchedulerOptions.timezone}. @default the scheduler's */
  timezone?: string;
  /** See {@link SchedulerOptions.missedTicks}. @default the scheduler's ('skip') */
  missedTicks?: MissedTicks;
  /** See {@link SchedulerOptions.missedTickTolerance}. @default the scheduler's (1000) */
  missedTickTolerance?: number;
}

const JOB_KEYS = ['lockAtMostFor', 'lockAtLeastFor', 'timezone', 'missedTicks', 'missedTickTolerance'] as const;

/** Options of {@link Scheduler.claim} and {@link Scheduler.run}. */
export interface ClaimOptions {
  /** See {@link SchedulerOptions.lockAtMostFor}. @default the scheduler's (60000) */
  lockAtMostFor?: number;
  /** See {@link SchedulerOptions.lockAtLeastFor}. Must not exceed `lockAtMostFor`. @default the scheduler's (0), at most `lockAtMostFor` */
  lockAtLeastFor?: number;
  /** The job's schedule as `holdfast jobs` shows it, e.g. a cron expression. @default '' (keeps the one recorded) */
  schedule?: string;
}

const CLAIM_KEYS = ['lockAtMostFor', 'lockAtLeastFor', 'schedule'] as const;

/** What a job function receives. */
export interface JobContext {
  /** The job's name. */
  name: string;
  /** The tick this run is for (its scheduled time, the same on every instance). */
  tick: Date;
  /**
   * Aborts when the run must stop: `lockAtMostFor` is about to run out (reason: `LockLostError`), or the scheduler
   * is stopped with `{ abort: true }` or its holdfast client is closed.
   */
  signal: AbortSignal;
}

/** A scheduled function. */
export type JobFunction = (context: JobContext) => unknown;

/** Which run an event or error is about. */
export interface JobRunInfo {
  /** The job's name. */
  name: string;
  /** The tick. */
  tick: Date;
  /** What failed: the job itself, or the Redis call that claims or finishes the tick. */
  phase: 'run' | 'claim' | 'finish';
}

/**
 * Why this instance did not run a tick: another instance claimed it, an earlier run (on any instance) still holds
 * the job, a run of it is still going here, or the tick was missed (see {@link SchedulerOptions.missedTicks}).
 */
export type SkipReason = 'claimed-elsewhere' | 'locked' | 'running-here' | 'missed';

/** What {@link Scheduler.run} did. */
export type RunOutcome =
  | {
      /** The job ran here. */
      readonly ran: true;
      /** How long it took, in ms. */
      readonly durationMs: number;
      /** What it threw, or `undefined`. */
      readonly error: unknown;
    }
  | {
      /** The job did not run here. */
      readonly ran: false;
      /** Why not. */
      readonly reason: Exclude<SkipReason, 'missed' | 'running-here'> | 'claim-failed';
    };

/** Events of a {@link Scheduler}. */
export interface SchedulerEvents {
  /** A run finished without throwing. */
  run: [
    info: {
      /** The job's name. */
      name: string;
      /** The tick that ran (its scheduled instant). */
      tick: Date;
      /** How long the run took, ms. */
      durationMs: number;
    },
  ];
  /** This instance did not run a tick: another instance claimed it, or an earlier run still holds the job. */
  skip: [
    info: {
      /** The job's name. */
      name: string;
      /** The tick that was skipped. */
      tick: Date;
      /** Why this instance did not run it. */
      reason: SkipReason;
    },
  ];
  /** A run threw, or Redis failed while claiming or finishing a tick. The schedule goes on. */
  jobError: [error: unknown, info: JobRunInfo];
}

/** How long a job's tick record is kept after a run at least: instances whose clocks differ by less never re-run it. */
const TICK_MEMORY_MS = 60_000;
/** How long a job's record (last run, by whom, how long, error) is kept after its last claim: `holdfast jobs`. */
export const JOB_RECORD_MS = 7 * 24 * 3_600_000;
/** Longest single timer: later ticks are reached in steps (a Node timer cannot hold more than ~24.8 days). */
const MAX_SLEEP_MS = 3_600_000;
/** Longest error message kept in a job's record. */
const MAX_ERROR_CHARS = 300;

/**
 * Runs cron-scheduled functions once per tick across every instance that schedules the same job name. Get one from
 * `holdfast.scheduler(options)`.
 *
 * A tick is skipped, not queued, when the previous run (on any instance) still holds the job. Ticks missed while the
 * process was blocked or Redis was unreachable are skipped too, unless `missedTicks: 'run-latest'`. A run that throws
 * is reported (`jobError`) and the schedule goes on.
 *
 * @example
 * ```ts
 * const scheduler = holdfast.scheduler({ timezone: 'UTC' });
 * scheduler.schedule('nightly-report', '0 0 3 * * *', async ({ signal }) => {
 *   await buildReport({ signal });
 * }, { lockAtMostFor: 10 * 60_000, lockAtLeastFor: 30_000 });
 * // on shutdown: waits for a running job (or pass { abort: true } to abort it through its signal)
 * await scheduler.stop();
 * ```
 */
export class Scheduler extends EventEmitter<SchedulerEvents> {
  readonly #core: Core;
  readonly #defaults: Required<Omit<SchedulerOptions, 'timezone' | 'onError'>> & Pick<SchedulerOptions, 'timezone' | 'onError'>;
  readonly #jobs = new Map<string, ScheduledJob>();
  readonly #runs = new Set<Promise<unknown>>();
  readonly #stopController = new AbortController();
  #stopped = false;
  #fingerprint: string | undefined;

  /** @internal */
  constructor(core: Core, options?: SchedulerOptions) {
    super();
    const opts = checkOptions<SchedulerOptions>(options);
    checkKnownKeys(opts, SCHEDULER_KEYS);
    const lockAtMostFor = optDuration(opts.lockAtMostFor, 'options.lockAtMostFor') ?? 60_000;
    const lockAtLeastFor = optDuration(opts.lockAtLeastFor, 'options.lockAtLeastFor', 0) ?? 0;
    if (lockAtLeastFor > lockAtMostFor) throw new RangeError(`options.lockAtLeastFor (${lockAtLeastFor}) must not exceed options.lockAtMostFor (${lockAtMostFor})`);
    const timezone = checkTimezone(opts.timezone, 'options.timezone');
    const onError = optFunction<SchedulerOptions['onError']>(opts.onError, 'options.onError');
    this.#core = core;
    this.#defaults = {
      lockAtMostFor,
      lockAtLeastFor,
      missedTicks: checkMissedTicks(opts.missedTicks, 'options.missedTicks') ?? 'skip',
      missedTickTolerance: optDuration(opts.missedTickTolerance, 'options.missedTickTolerance', 0) ?? 1000,
      keepAlive: optBoolean(opts.keepAlive, 'options.keepAlive') ?? false,
      ...(timezone === undefined ? {} : { timezone }),
      ...(onError === undefined ? {} : { onError }),
    };
  }

  /** The jobs scheduled and not stopped. */
  get jobs(): readonly ScheduledJob[] {
    return [...this.#jobs.values()];
  }

  /**
   * This instance's fingerprint: the {@link fingerprint} of its holdfast client's random id (the same form as every
   * owner's), recorded with every run it makes and shown by `holdfast jobs`. Log it at start-up to tell which instance ran a job.
   */
  get fingerprint(): string {
    this.#fingerprint ??= fingerprint(this.#core.clientId);
    return this.#fingerprint;
  }

  /**
   * Schedules `fn` under `name` on `cron`: a 5-field (minute precision) or 6-field (leading seconds) cron expression,
   * e.g. `'*\/5 * * * * *'` for every 5 seconds. Every instance that schedules the same name shares its ticks: each
   * tick runs on one of them. Timing starts at once.
   * @throws {TypeError | RangeError} for a bad name, expression, function or option
   * @throws {Error} when this scheduler already has a job of that name, or was stopped
   */
  schedule(name: string, cron: string, fn: JobFunction, options?: JobOptions): ScheduledJob {
    checkName(name);
    if (typeof cron !== 'string') throw new TypeError(`cron must be a string, got ${typeof cron}`);
    if (typeof fn !== 'function') throw new TypeError(`fn must be a function, got ${typeof fn}`);
    const opts = checkOptions<JobOptions>(options);
    checkKnownKeys(opts, JOB_KEYS);
    const { lockAtMostFor, lockAtLeastFor } = this.#locks(opts);
    const timezone = checkTimezone(opts.timezone, 'options.timezone') ?? this.#defaults.timezone;
    const missedTicks = checkMissedTicks(opts.missedTicks, 'options.missedTicks') ?? this.#defaults.missedTicks;
    const missedTickTolerance = optDuration(opts.missedTickTolerance, 'options.missedTickTolerance', 0) ?? this.#defaults.missedTickTolerance;
    const CronPattern = cronClass();
    let pattern: Cron;
    try {
      // Without a callback croner only parses and computes; holdfast keeps the timers.
      pattern = new CronPattern(cron, { ...(timezone === undefined ? {} : { timezone }), paused: true });
    } catch (error) {
      throw new RangeError(`cron ${JSON.stringify(cron)} is not a valid cron expression: ${error instanceof Error ? error.message : String(error)}`, {
        cause: error,
      });
    }
    if (this.#stopped) throw new Error('the scheduler was stopped');
    this.#core.assertOpen();
    if (this.#jobs.has(name)) throw new Error(`a job named "${name}" is already scheduled on this scheduler`);
    const job = new ScheduledJob(this, name, cron, pattern, fn, { lockAtMostFor, lockAtLeastFor }, { missedTicks, missedTickTolerance });
    this.#jobs.set(name, job);
    this.#core.holds.add(this);
    job.start();
    return job;
  }

  /**
   * Claims one tick of the job `name` for this instance, the way a scheduled job's tick is claimed: resolves a
   * {@link JobClaim} when this instance won it (run the job, then `finish()` the claim), or `null` when another
   * instance claimed it or an earlier run still holds the job (a `skip` event says which). For schedulers other than
   * holdfast's own: the node-cron, `cron` and NestJS adapters are built on it.
   *
   * A claim whose reply does not come within `commandTimeout` rejects, and is undone behind itself on the same
   * connection, so a claim that a stalled Redis runs late never leaves the job locked.
   * @param tick the tick's scheduled time: the same on every instance for the same tick
   * @throws {TypeError | RangeError} for a bad name, tick or option
   * @throws {RedisConnectionError} when Redis did not answer (nothing is left locked)
   */
  async claim(name: string, tick: Date | number, options?: ClaimOptions): Promise<JobClaim | null> {
    checkName(name);
    const at = checkTick(tick);
    const opts = checkOptions<ClaimOptions>(options);
    checkKnownKeys(opts, CLAIM_KEYS);
    const locks = this.#locks(opts);
    if (opts.schedule !== undefined && typeof opts.schedule !== 'string') throw new TypeError(`options.schedule must be a string, got ${typeof opts.schedule}`);
    this.#core.assertOpen();
    if (this.#stopped) throw new Error('the scheduler was stopped');
    const claim = await this.claimTick(name, at, locks, opts.schedule ?? '');
    return claim instanceof JobClaim ? claim : null;
  }

  /**
   * Claims a tick of `name` ({@link Scheduler.claim}) and, when this instance won it, runs `fn` and finishes the
   * claim. Never rejects for the job's or Redis' failures: a throwing `fn` and a failed claim or finish are reported
   * (`onError`, `jobError`) and said in the outcome. `stop()` and `holdfast.close()` wait for it.
   * @throws {TypeError | RangeError} for a bad name, tick, function or option
   */
  async run(name: string, tick: Date | number, fn: JobFunction, options?: ClaimOptions): Promise<RunOutcome> {
    checkName(name);
    const at = checkTick(tick);
    if (typeof fn !== 'function') throw new TypeError(`fn must be a function, got ${typeof fn}`);
    const opts = checkOptions<ClaimOptions>(options);
    checkKnownKeys(opts, CLAIM_KEYS);
    const locks = this.#locks(opts);
    if (opts.schedule !== undefined && typeof opts.schedule !== 'string') throw new TypeError(`options.schedule must be a string, got ${typeof opts.schedule}`);
    this.#core.assertOpen();
    if (this.#stopped) throw new Error('the scheduler was stopped');
    this.#core.holds.add(this);
    const run = this.runTick(name, at, fn, locks, opts.schedule ?? '');
    this.#runs.add(run);
    try {
      return await run;
    } finally {
      this.#runs.delete(run);
    }
  }

  /**
   * Stops every job: no new tick starts. Waits for runs in progress to end; with `abort: true` their signals abort
   * first (reason: an `AbortError` `DOMException`). Idempotent.
   */
  async stop(options?: { abort?: boolean }): Promise<void> {
    const opts = checkOptions<{ abort?: boolean }>(options);
    checkKnownKeys(opts, ['abort']);
    const abort = optBoolean(opts.abort, 'options.abort') ?? false;
    this.#stopped = true;
    if (abort && !this.#stopController.signal.aborted) this.#stopController.abort(new DOMException('the scheduler was stopped', 'AbortError'));
    const jobs = [...this.#jobs.values()];
    await Promise.all([...jobs.map((job) => job.stop()), ...[...this.#runs].map((r) => r.catch(() => {}))]);
    this.#core.holds.delete(this);
  }

  /** @internal `holdfast.close()`: abort runs in progress and wait for them. */
  closeHold(): Promise<void> {
    return this.stop({ abort: true });
  }

  /** @internal */
  get core(): Core {
    return this.#core;
  }
  /** @internal */
  get keepAlive(): boolean {
    return this.#defaults.keepAlive;
  }
  /** @internal */
  get stopSignal(): AbortSignal {
    return this.#stopController.signal;
  }
  /** @internal */
  forget(job: ScheduledJob): void {
    if (this.#jobs.get(job.name) === job) this.#jobs.delete(job.name);
    if (this.#jobs.size === 0 && this.#runs.size === 0 && !this.#stopped) this.#core.holds.delete(this);
  }
  /** @internal Emits an event; a listener that throws never escapes into a timer or a run. */
  notify<K extends 'run' | 'skip'>(event: K, ...args: SchedulerEvents[K]): void {
    try {
      (this.emit as (e: K, ...a: SchedulerEvents[K]) => boolean)(event, ...args);
    } catch (error) {
      console.error(`holdfast scheduler: a "${event}" listener threw:`, error);
    }
  }
  /** @internal Reports a failure: `onError`, the `jobError` event, else `console.error`. Never throws. */
  report(error: unknown, info: JobRunInfo): void {
    try {
      this.#defaults.onError?.(error, info);
      if (this.listenerCount('jobError') > 0) this.emit('jobError', error, info);
      else if (!this.#defaults.onError) console.error(`holdfast scheduler: job "${info.name}" (${info.phase}, tick ${info.tick.toISOString()}) failed:`, error);
    } catch {
      /* a reporter's own bug must not escape a timer */
    }
  }

  /**
   * @internal Claims `tick` of `name`: the claim, or why not (after a `skip` event). On a failed claim, the owner-checked abandon goes out right behind it on the
   * same connection: Redis runs commands of one connection in order, so if the claim still runs (a stalled server
   * that resumes), the abandon undoes it at once instead of leaving an owner that will never run nor finish the job.
   */
  async claimTick(name: string, tick: number, locks: JobLocks, schedule: string): Promise<JobClaim | 'locked' | 'claimed-elsewhere'> {
    const core = this.#core;
    const key = core.keys.job(name);
    const owner = core.newOwner();
    const sentAt = now();
    const claimed = await core
      .run(scripts['scheduler/claim'], [key], [
        String(tick),
        owner,
        locks.lockAtMostFor,
        Math.max(TICK_MEMORY_MS, locks.lockAtLeastFor),
        this.fingerprint,
        schedule,
        JOB_RECORD_MS,
      ])
      .catch((error: unknown) => {
        if (!(error instanceof ScriptError)) {
          // No reply: the claim may still be queued on the connection (or resent after a reconnect).
          core.run(scripts['scheduler/abandon'], [key], [owner], Math.max(core.settings.commandTimeout, locks.lockAtMostFor)).catch(() => {});
        }
        throw error;
      });
    if (claimed[0] !== 1) {
      const reason = (claimed[1] ?? 0) > 0 ? 'locked' : 'claimed-elsewhere';
      this.notify('skip', { name, tick: new Date(tick), reason });
      return reason;
    }
    return new JobClaim(this, name, new Date(tick), owner, locks, sentAt);
  }

  /** @internal Claims, runs `fn` if claimed, finishes; reports failures, never rejects. */
  async runTick(name: string, tick: number, fn: JobFunction, locks: JobLocks, schedule: string, onClaimFailed?: (error: unknown) => void): Promise<RunOutcome> {
    const tickDate = new Date(tick);
    let claim: JobClaim | 'locked' | 'claimed-elsewhere';
    try {
      claim = await this.claimTick(name, tick, locks, schedule);
    } catch (error) {
      this.report(error, { name, tick: tickDate, phase: 'claim' });
      onClaimFailed?.(error);
      return { ran: false, reason: 'claim-failed' };
    }
    if (!(claim instanceof JobClaim)) return { ran: false, reason: claim };
    const started = now();
    let error: unknown;
    let failed = false;
    try {
      await fn({ name, tick: tickDate, signal: claim.signal });
    } catch (e) {
      failed = true;
      error = e;
      this.report(e, { name, tick: tickDate, phase: 'run' });
    }
    const durationMs = Math.round(now() - started);
    if (!failed) this.notify('run', { name, tick: tickDate, durationMs });
    try {
      await claim.finish(failed ? { error } : undefined);
    } catch (e) {
      // The lock lapses by itself after lockAtMostFor.
      this.report(e, { name, tick: tickDate, phase: 'finish' });
    }
    return { ran: true, durationMs, error };
  }

  /** Lock durations from options, validated, falling back to this scheduler's. */
  #locks(opts: { lockAtMostFor?: number; lockAtLeastFor?: number }): JobLocks {
    const lockAtMostFor = optDuration(opts.lockAtMostFor, 'options.lockAtMostFor') ?? this.#defaults.lockAtMostFor;
    // the scheduler's lockAtLeastFor is capped at a shorter lockAtMostFor; one given with the job must fit
    const lockAtLeastFor = optDuration(opts.lockAtLeastFor, 'options.lockAtLeastFor', 0) ?? Math.min(this.#defaults.lockAtLeastFor, lockAtMostFor);
    if (lockAtLeastFor > lockAtMostFor) throw new RangeError(`options.lockAtLeastFor (${lockAtLeastFor}) must not exceed options.lockAtMostFor (${lockAtMostFor})`);
    return { lockAtMostFor, lockAtLeastFor };
  }
}

/** A job's lock durations in ms. */
export interface JobLocks {
  /** See {@link SchedulerOptions.lockAtMostFor}. */
  readonly lockAtMostFor: number;
  /** See {@link SchedulerOptions.lockAtLeastFor}. */
  readonly lockAtLeastFor: number;
}

/**
 * One tick of a job claimed by this instance ({@link Scheduler.claim}): run the job, then {@link JobClaim.finish}.
 * An instance that crashes before finishing frees the job after `lockAtMostFor`.
 */
export class JobClaim {
  readonly #scheduler: Scheduler;
  readonly #owner: string;
  readonly #lease: Lease;
  readonly #started = now();
  #finished: Promise<boolean> | undefined;
  /**
   * Aborts when the run must stop: `lockAtMostFor` is about to run out (reason: `LockLostError`), or the scheduler
   * is stopped with `{ abort: true }` or its holdfast client is closed.
   */
  readonly signal: AbortSignal;

  /** @internal */
  constructor(
    scheduler: Scheduler,
    /** The job's name. */
    readonly name: string,
    /** The claimed tick. */
    readonly tick: Date,
    owner: string,
    /** The claim's lock durations in ms. */
    readonly locks: JobLocks,
    sentAt: number,
  ) {
    this.#scheduler = scheduler;
    this.#owner = owner;
    // The signal aborts before lockAtMostFor can lapse in Redis (a fixed lease, never renewed).
    this.#lease = new Lease({
      name: `job:${name}`,
      leaseMs: locks.lockAtMostFor,
      renewEveryMs: undefined,
      sentAt,
      renew: async () => false,
      onLost: () => {
        /* the run's signal says it; nothing else holds this lease */
      },
    });
    this.signal = AbortSignal.any([this.#lease.signal, scheduler.stopSignal]);
  }

  /**
   * Ends the run: the job stays locked until `lockAtLeastFor` after the claim, then any instance may claim a later
   * tick. Records the run (duration, and `error`'s message when given) for `holdfast jobs`. Idempotent: later calls
   * return the first one's promise.
   * @returns true when this claim still held the job, false when `lockAtMostFor` had lapsed (or it was force-cleared)
   * @throws {RedisConnectionError} when Redis did not answer (the lock then lapses after `lockAtMostFor`)
   */
  finish(options?: { error?: unknown }): Promise<boolean> {
    if (this.#finished) return this.#finished;
    this.#lease.stop();
    const opts = checkOptions<{ error?: unknown }>(options);
    checkKnownKeys(opts, ['error']);
    const message = 'error' in opts ? errorMessage(opts.error) : '';
    const durationMs = Math.round(now() - this.#started);
    const core = this.#scheduler.core;
    this.#finished = core
      .run(scripts['scheduler/finish'], [core.keys.job(this.name)], [this.#owner, this.locks.lockAtLeastFor, durationMs, message, JOB_RECORD_MS])
      .then((reply) => reply === 1);
    return this.#finished;
  }
}

/** One scheduled job. */
export class ScheduledJob {
  #timer: NodeJS.Timeout | undefined;
  #retry: NodeJS.Timeout | undefined;
  #running: Promise<unknown> | undefined;
  #nextTick: number | undefined;
  #stopped = false;
  #runs = 0;

  /** @internal */
  constructor(
    /** The scheduler that runs this job. */
    readonly scheduler: Scheduler,
    /** The job's name. */
    readonly name: string,
    /** The cron expression. */
    readonly cron: string,
    private readonly pattern: Cron,
    private readonly fn: JobFunction,
    /** The job's lock durations in ms. */
    readonly locks: JobLocks,
    /** What the job does with missed ticks. */
    readonly missed: {
      /** See `SchedulerOptions.missedTicks`. */
      readonly missedTicks: MissedTicks;
      /** See `SchedulerOptions.missedTickTolerance`. */
      readonly missedTickTolerance: number;
    },
  ) {}

  /** The next tick this instance will try to claim, or `null` when none is left (or the job was stopped). */
  get nextRun(): Date | null {
    return this.#stopped || this.#nextTick === undefined ? null : new Date(this.#nextTick);
  }
  /** How many runs this instance made (succeeded or threw). */
  get runs(): number {
    return this.#runs;
  }
  /** True while a run of this job is in progress on this instance. */
  get running(): boolean {
    return this.#running !== undefined;
  }

  /** @internal */
  start(): void {
    this.#arm(Date.now());
  }

  /** Stops this job: no new tick starts; waits for a run in progress. */
  async stop(): Promise<void> {
    this.#stopped = true;
    clearTimeout(this.#timer);
    clearTimeout(this.#retry);
    this.#timer = undefined;
    this.scheduler.forget(this);
    await this.#running;
  }

  /** Sets a timer for the first tick after `from` (epoch ms). */
  #arm(from: number): void {
    if (this.#stopped) return;
    const next = this.pattern.nextRun(new Date(from));
    if (!next) {
      this.#nextTick = undefined;
      return;
    }
    this.#nextTick = next.getTime();
    this.#wait(next.getTime());
  }

  /** Sleeps until `tick`; a long wait is taken in steps. A tick is its scheduled instant, never when a timer fired. */
  #wait(tick: number): void {
    const delay = tick - Date.now();
    this.#timer = setTimeout(
      () => {
        if (this.#stopped) return;
        if (tick - Date.now() > 5) this.#wait(tick);
        else this.#fire(tick);
      },
      Math.max(0, Math.min(delay, MAX_SLEEP_MS)),
    );
    if (!this.scheduler.keepAlive) this.#timer.unref();
  }

  #fire(tick: number): void {
    const at = Date.now();
    // Next tick first, from the later of this tick and now: ticks that fell due meanwhile are not queued.
    this.#arm(Math.max(tick, at));
    clearTimeout(this.#retry); // a newer tick supersedes a retry of an older one
    if (at - tick > this.missed.missedTickTolerance) {
      // The timer fired late: the process was blocked (GC, a busy event loop, a suspended VM) past this tick.
      if (this.missed.missedTicks === 'skip') {
        this.scheduler.notify('skip', { name: this.name, tick: new Date(tick), reason: 'missed' });
        return;
      }
      tick = this.pattern.previousRuns(1, new Date(at + 1))[0]?.getTime() ?? tick;
    }
    this.#start(tick, 0);
  }

  #start(tick: number, attempt: number): void {
    if (this.#stopped) return;
    if (this.#running) {
      this.scheduler.notify('skip', { name: this.name, tick: new Date(tick), reason: 'running-here' });
      return;
    }
    const run = this.scheduler
      .runTick(
        this.name,
        tick,
        (context) => {
          this.#runs++;
          return this.fn(context);
        },
        this.locks,
        this.cron,
        () => this.#retryLater(tick, attempt),
      )
      .finally(() => {
        if (this.#running === run) this.#running = undefined;
      });
    this.#running = run;
  }

  /** `run-latest`: claims a tick that Redis failed to answer for again later, unless the next tick comes first. */
  #retryLater(tick: number, attempt: number): void {
    if (this.missed.missedTicks !== 'run-latest' || this.#stopped) return;
    // `attempt` counts from 0: after the first failed claim, the first pause
    const delay = pauseAfter(JOB_CLAIM_BACKOFF, attempt + 1);
    if (this.#nextTick !== undefined && Date.now() + delay >= this.#nextTick) return;
    this.#retry = setTimeout(() => {
      // the failed claim's promise settles right after this callback was set: start once it has
      void Promise.resolve(this.#running).then(() => this.#start(tick, attempt + 1));
    }, delay);
    if (!this.scheduler.keepAlive) this.#retry.unref();
  }
}

function checkTimezone(value: unknown, what: string): string | undefined {
  if (value === undefined) return undefined;
  if (typeof value !== 'string' || value.length === 0) throw new TypeError(`${what} must be a non-empty IANA timezone name, got ${typeof value}`);
  try {
    new Intl.DateTimeFormat('en-US', { timeZone: value });
  } catch (error) {
    throw new RangeError(`${what} ${JSON.stringify(value)} is not a known timezone`, { cause: error });
  }
  return value;
}

function checkMissedTicks(value: unknown, what: string): MissedTicks | undefined {
  if (value === undefined) return undefined;
  if (typeof value !== 'string') throw new TypeError(`${what} must be 'skip' or 'run-latest', got ${typeof value}`);
  if (value !== 'skip' && value !== 'run-latest') throw new RangeError(`${what} must be 'skip' or 'run-latest', got ${JSON.stringify(value)}`);
  return value;
}

function checkTick(value: unknown): number {
  const ms = value instanceof Date ? value.getTime() : value;
  if (typeof ms !== 'number') throw new TypeError(`tick must be a Date or epoch ms, got ${typeof value}`);
  if (!Number.isSafeInteger(ms) || ms < 0) throw new RangeError(`tick must be a valid time at or after 1970, got ${String(value)}`);
  return ms;
}

function errorMessage(error: unknown): string {
  const text = error instanceof Error ? `${error.name}: ${error.message}` : String(error);
  const line = text.length === 0 ? 'error' : text;
  return line.length > MAX_ERROR_CHARS ? `${line.slice(0, MAX_ERROR_CHARS - 1)}…` : line;
}

export type { JobInfo } from './job-info.js';

/** @internal Reads one job's record; `undefined` when there is none. */
export async function inspectJob(core: Core, name: string): Promise<JobInfo | undefined> {
  const key = core.keys.job(name);
  const [now, ...flat] = await core.run(scripts['scheduler/inspect'], [key], []);
  if (flat.length === 0) return undefined;
  const f = new Map<string, string>();
  for (let i = 0; i + 1 < flat.length; i += 2) f.set(String(flat[i]), String(flat[i + 1]));
  const num = (k: string): number | null => (f.get(k) === undefined || f.get(k) === '' ? null : Number(f.get(k)));
  const iso = (k: string): string | null => {
    const ms = num(k);
    return ms === null ? null : new Date(ms).toISOString();
  };
  const lockedUntil = num('u') ?? 0;
  const running = f.has('o') && lockedUntil > Number(now);
  const started = num('s');
  return {
    name,
    schedule: f.get('c') ?? null,
    lastClaimedTick: iso('t'),
    lastRunTick: iso('rt'),
    lastRunBy: f.get('rf') || null,
    lastRunMs: num('rd'),
    lastRunFinishedAt: iso('rx'),
    lastError: f.get('re') || null,
    failuresInARow: num('ec') ?? 0,
    runs: num('rn') ?? 0,
    running,
    runningOn: running ? f.get('f') || null : null,
    runningForMs: running && started !== null ? Math.max(0, Number(now) - started) : null,
    lockedForMs: Math.max(0, lockedUntil - Number(now)),
  };
}

/**
 * Scheduled jobs that run once per tick across any number of instances, with ShedLock's `lockAtMostFor` /
 * `lockAtLeastFor`. Every instance computes the same ticks from the cron expression (croner parses it); at a tick
 * each one asks Redis, in one script, to claim that tick: the first claim wins, the others see the tick recorded
 * (or the lock still held) and skip.
 *
 * @module
 */
import { EventEmitter } from 'node:events';
import { Cron } from 'croner';
import type { Closable, Core } from '../core.js';
import { now } from '../internal/clock.js';
import { Lease } from '../internal/lease.js';
import { checkKnownKeys, checkName, checkOptions, optBoolean, optDuration, optFunction } from '../internal/validate.js';
import { scripts } from '../lua/scripts.gen.js';

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
   * Keep the process alive while jobs are scheduled. By default the timers are unref'd: your Redis connection
   * usually keeps the process alive anyway, and closing it lets the process exit.
   * @default false
   */
  keepAlive?: boolean;
  /**
   * Called for every failed run (the job threw) and every tick that could not be claimed or finished because Redis
   * failed. The schedule goes on. Also emitted as the `jobError` event; with neither, errors go to `console.error`.
   */
  onError?: (error: unknown, info: JobRunInfo) => void;
}

const SCHEDULER_KEYS = ['lockAtMostFor', 'lockAtLeastFor', 'timezone', 'keepAlive', 'onError'] as const;

/** Options of one job (override the scheduler's). */
export interface JobOptions {
  /** See {@link SchedulerOptions.lockAtMostFor}. @default the scheduler's (60000) */
  lockAtMostFor?: number;
  /** See {@link SchedulerOptions.lockAtLeastFor}. Must not exceed `lockAtMostFor`. @default the scheduler's (0) */
  lockAtLeastFor?: number;
  /** See {@link SchedulerOptions.timezone}. @default the scheduler's */
  timezone?: string;
}

const JOB_KEYS = ['lockAtMostFor', 'lockAtLeastFor', 'timezone'] as const;

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

/** Why this instance did not run a tick. */
export type SkipReason = 'claimed-elsewhere' | 'locked' | 'running-here';

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
/** Longest single timer: later ticks are reached in steps (a Node timer cannot hold more than ~24.8 days). */
const MAX_SLEEP_MS = 3_600_000;

/**
 * Runs cron-scheduled functions once per tick across every instance that schedules the same job name. Get one from
 * `holdfast.scheduler(options)`.
 *
 * A tick is skipped, not queued, when the previous run (on any instance) still holds the job. Ticks missed while the
 * process was blocked are skipped too. A run that throws is reported (`jobError`) and the schedule goes on.
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
export class Scheduler extends EventEmitter<SchedulerEvents> implements Closable {
  readonly #core: Core;
  readonly #defaults: Required<Omit<SchedulerOptions, 'timezone' | 'onError'>> & Pick<SchedulerOptions, 'timezone' | 'onError'>;
  readonly #jobs = new Map<string, ScheduledJob>();
  readonly #stopController = new AbortController();
  #stopped = false;

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
    const lockAtMostFor = optDuration(opts.lockAtMostFor, 'options.lockAtMostFor') ?? this.#defaults.lockAtMostFor;
    const lockAtLeastFor = optDuration(opts.lockAtLeastFor, 'options.lockAtLeastFor', 0) ?? Math.min(this.#defaults.lockAtLeastFor, lockAtMostFor);
    if (lockAtLeastFor > lockAtMostFor) throw new RangeError(`options.lockAtLeastFor (${lockAtLeastFor}) must not exceed options.lockAtMostFor (${lockAtMostFor})`);
    const timezone = checkTimezone(opts.timezone, 'options.timezone') ?? this.#defaults.timezone;
    let pattern: Cron;
    try {
      // Without a callback croner only parses and computes; holdfast keeps the timers.
      pattern = new Cron(cron, { ...(timezone === undefined ? {} : { timezone }), paused: true });
    } catch (error) {
      throw new RangeError(`cron ${JSON.stringify(cron)} is not a valid cron expression: ${error instanceof Error ? error.message : String(error)}`, {
        cause: error,
      });
    }
    if (this.#stopped) throw new Error('the scheduler was stopped');
    this.#core.assertOpen();
    if (this.#jobs.has(name)) throw new Error(`a job named "${name}" is already scheduled on this scheduler`);
    const job = new ScheduledJob(this, name, cron, pattern, fn, { lockAtMostFor, lockAtLeastFor });
    this.#jobs.set(name, job);
    this.#core.holds.add(this);
    job.start();
    return job;
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
    await Promise.all(jobs.map((job) => job.stop()));
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
    if (this.#jobs.size === 0 && !this.#stopped) this.#core.holds.delete(this);
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
}

/** One scheduled job. */
export class ScheduledJob {
  #timer: NodeJS.Timeout | undefined;
  #running: Promise<void> | undefined;
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
    readonly locks: {
      /** The longest a run holds the job, ms. */
      lockAtMostFor: number;
      /** The shortest a run holds the job, ms. */
      lockAtLeastFor: number;
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
    // Next tick first, from the later of this tick and now: ticks missed while the process was blocked are skipped.
    this.#arm(Math.max(tick, Date.now()));
    if (this.#running) {
      this.scheduler.notify('skip', { name: this.name, tick: new Date(tick), reason: 'running-here' });
      return;
    }
    const run = this.#runTick(tick)
      .catch((error: unknown) => this.scheduler.report(error, { name: this.name, tick: new Date(tick), phase: 'run' }))
      .finally(() => {
        if (this.#running === run) this.#running = undefined;
      });
    this.#running = run;
  }

  async #runTick(tick: number): Promise<void> {
    const core = this.scheduler.core;
    const key = core.keys.job(this.name);
    const owner = core.newOwner();
    const { lockAtMostFor, lockAtLeastFor } = this.locks;
    const tickDate = new Date(tick);
    const sentAt = now();
    let claimed: number[];
    try {
      claimed = (await core.run(scripts['scheduler/claim'], [key], [String(tick), owner, lockAtMostFor, Math.max(TICK_MEMORY_MS, lockAtLeastFor)])) as number[];
    } catch (error) {
      this.scheduler.report(error, { name: this.name, tick: tickDate, phase: 'claim' });
      return;
    }
    if (claimed[0] !== 1) {
      const reason: SkipReason = (claimed[1] ?? 0) > 0 ? 'locked' : 'claimed-elsewhere';
      this.scheduler.notify('skip', { name: this.name, tick: tickDate, reason });
      return;
    }
    // The run's signal aborts before lockAtMostFor can lapse in Redis (a fixed lease, never renewed).
    const lease = new Lease({
      name: `job:${this.name}`,
      leaseMs: lockAtMostFor,
      renewEveryMs: undefined,
      sentAt,
      renew: async () => false,
      onLost: () => {
        /* the run's signal says it; nothing else holds this lease */
      },
    });
    const signal = AbortSignal.any([lease.signal, this.scheduler.stopSignal]);
    const started = now();
    let failed = false;
    this.#runs++;
    try {
      await this.fn({ name: this.name, tick: tickDate, signal });
    } catch (error) {
      failed = true;
      this.scheduler.report(error, { name: this.name, tick: tickDate, phase: 'run' });
    } finally {
      lease.stop();
    }
    if (!failed) this.scheduler.notify('run', { name: this.name, tick: tickDate, durationMs: Math.round(now() - started) });
    try {
      await core.run(scripts['scheduler/finish'], [key], [owner, lockAtLeastFor, Math.max(TICK_MEMORY_MS, lockAtLeastFor)]);
    } catch (error) {
      // The lock lapses by itself after lockAtMostFor.
      this.scheduler.report(error, { name: this.name, tick: tickDate, phase: 'finish' });
    }
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

/**
 * `holdfast/nestjs`: `@RunOnce()`, a method decorator used beside `@nestjs/schedule`'s `@Cron()` (or `@Interval()`)
 * that runs each tick on one instance of the application, with ShedLock's `lockAtMostFor` / `lockAtLeastFor`.
 * `RunOnceModule.forRoot(...)` says which holdfast client the claims go through. Nothing of Nest is imported at run
 * time: the module is a plain dynamic module and the decorator only wraps the method.
 *
 * @example
 * ```ts
 * @Module({ imports: [ScheduleModule.forRoot(), RunOnceModule.forRoot(holdfast)], providers: [Reports] })
 * class AppModule {}
 *
 * @Injectable()
 * class Reports {
 *   @Cron('0 0 3 * * *', { name: 'nightly-report' })
 *   @RunOnce({ lockAtMostFor: 10 * 60_000, lockAtLeastFor: 30_000 })
 *   async nightly() {
 *     const { signal } = currentRun()!;
 *     await buildReport({ signal });
 *   }
 * }
 * ```
 *
 * @module
 */
import { AsyncLocalStorage } from 'node:async_hooks';
import { checkKnownKeys, checkName, checkOptions, optDuration } from '../internal/validate.js';
import type { JobContext, Scheduler } from '../recipes/scheduler.js';
import { schedulerOf, tickOfFire, type ClaimSource } from './common.js';

/** Options of {@link RunOnce}. */
export interface RunOnceOptions {
  /**
   * The job's name: the same on every instance.
   * @default the `name` given to `@Cron()`, else `<ClassName>.<methodName>`
   */
  name?: string;
  /**
   * How long, in ms, a tick keeps the job locked at most: a crashed instance's run frees it then, and a run still
   * going is told through `currentRun().signal` just before.
   * @default the scheduler's (60000)
   */
  lockAtMostFor?: number;
  /**
   * How long, in ms, a tick keeps the job locked at least after it started: an instance whose clock runs late, or
   * whose timer fired late, cannot run the same tick again. Must not exceed `lockAtMostFor`.
   * @default the scheduler's (0)
   */
  lockAtLeastFor?: number;
}

/** The injection token of the scheduler `RunOnceModule` provides (its `jobError` / `skip` events, `fingerprint`). */
export const RUN_ONCE_SCHEDULER = 'holdfast:run-once-scheduler';

let current: Scheduler | undefined;
const runs = new AsyncLocalStorage<JobContext>();

/**
 * Inside a method decorated with {@link RunOnce} (and what it calls), the run in progress: its job name, tick and
 * `signal` (aborts before `lockAtMostFor` runs out, or when the holdfast client closes); elsewhere `undefined`.
 */
export function currentRun(): JobContext | undefined {
  return runs.getStore();
}

type MetadataReflect = {
  getMetadata?: (key: unknown, target: object) => unknown;
  getOwnMetadataKeys?: (target: object) => unknown[];
  getOwnMetadata?: (key: unknown, target: object) => unknown;
  defineMetadata?: (key: unknown, value: unknown, target: object) => void;
};

/**
 * Runs the decorated method on one instance per tick: the tick (the whole second the method was called in) is claimed
 * in Redis first; instances that lose it return without calling the method. Put it beside `@Cron()`, above or below.
 * A throwing method is reported through the scheduler (`jobError`, else `console.error`), not thrown into Nest.
 * @throws {TypeError | RangeError} for bad options, or when not put on a method
 */
export function RunOnce(options?: RunOnceOptions): MethodDecorator {
  const opts = checkOptions<RunOnceOptions>(options);
  checkKnownKeys(opts, ['name', 'lockAtMostFor', 'lockAtLeastFor']);
  if (opts.name !== undefined) checkName(opts.name, 'options.name');
  const lockAtMostFor = optDuration(opts.lockAtMostFor, 'options.lockAtMostFor');
  const lockAtLeastFor = optDuration(opts.lockAtLeastFor, 'options.lockAtLeastFor', 0);
  if (lockAtLeastFor !== undefined && lockAtLeastFor > (lockAtMostFor ?? Infinity)) {
    throw new RangeError(`options.lockAtLeastFor (${lockAtLeastFor}) must not exceed options.lockAtMostFor (${lockAtMostFor})`);
  }
  const locks = { ...(lockAtMostFor === undefined ? {} : { lockAtMostFor }), ...(lockAtLeastFor === undefined ? {} : { lockAtLeastFor }) };
  return (target, key, descriptor) => {
    const original: unknown = descriptor.value;
    if (typeof original !== 'function') throw new TypeError(`@RunOnce() decorates methods; ${String(key)} is not one`);
    const fallbackName = `${(target as { constructor?: { name?: string } }).constructor?.name ?? 'Object'}.${String(key)}`;
    const reflect = Reflect as unknown as MetadataReflect;
    const wrapped = async function (this: unknown, ...args: unknown[]): Promise<void> {
      const tick = tickOfFire();
      const scheduler = current;
      if (!scheduler) throw new Error('@RunOnce(): no holdfast client: import RunOnceModule.forRoot(holdfast) in your application module');
      // @Cron's metadata sits on whichever function it decorated: this wrapper, or the method (copied below).
      const cron = reflect.getMetadata?.('SCHEDULE_CRON_OPTIONS', wrapped) as { cronTime?: unknown } | undefined;
      const cronName = reflect.getMetadata?.('SCHEDULER_NAME', wrapped);
      const name = opts.name ?? (typeof cronName === 'string' && cronName !== '' ? cronName : fallbackName);
      await scheduler.run(name, tick, (context) => runs.run(context, () => (original as (...a: unknown[]) => unknown).apply(this, args)), {
        ...locks,
        schedule: typeof cron?.cronTime === 'string' ? cron.cronTime : 'nestjs',
      });
    };
    // Keep what decorators below this one (e.g. @Cron) recorded on the method.
    for (const k of reflect.getOwnMetadataKeys?.(original) ?? []) reflect.defineMetadata?.(k, reflect.getOwnMetadata?.(k, original), wrapped);
    Object.defineProperty(wrapped, 'name', { value: (original as { name: string }).name });
    (descriptor as { value: unknown }).value = wrapped;
    return descriptor;
  };
}

/**
 * A Nest dynamic module: assignable to `@nestjs/common`'s `DynamicModule` without a type import of Nest (the arrays
 * are typed `never[]` only so that they fit Nest's element types; they hold what you passed).
 */
export interface RunOnceDynamicModule {
  module: typeof RunOnceModule;
  global: boolean;
  imports: never[];
  providers: { provide: string; useFactory: (...deps: unknown[]) => Promise<Scheduler>; inject: never[] }[];
  exports: string[];
}

/** Options of {@link RunOnceModule.forRootAsync}. */
export interface RunOnceModuleAsyncOptions {
  /** Modules whose providers `useFactory` needs. @default [] */
  imports?: unknown[];
  /** Providers `useFactory` receives, in order. @default [] */
  inject?: unknown[];
  /** Returns the holdfast client (or one of its schedulers) the claims go through. */
  useFactory: (...deps: never[]) => ClaimSource | Promise<ClaimSource>;
}

/**
 * Says which holdfast client `@RunOnce()` claims through, for the whole application (a global module). Provides the
 * scheduler under {@link RUN_ONCE_SCHEDULER}.
 */
export class RunOnceModule {
  /**
   * With a holdfast client (or one of its schedulers) made beforehand.
   * @throws {TypeError} for anything else
   */
  static forRoot(source: ClaimSource): RunOnceDynamicModule {
    const scheduler = schedulerOf(source, {}, 'source');
    return RunOnceModule.#module([], [], async () => scheduler);
  }

  /** With a holdfast client made by a factory from other providers (e.g. your Redis connection). */
  static forRootAsync(options: RunOnceModuleAsyncOptions): RunOnceDynamicModule {
    const opts = checkOptions<RunOnceModuleAsyncOptions>(options);
    checkKnownKeys(opts, ['imports', 'inject', 'useFactory']);
    const factory = opts.useFactory as ((...deps: unknown[]) => ClaimSource | Promise<ClaimSource>) | undefined;
    if (typeof factory !== 'function') throw new TypeError(`options.useFactory must be a function, got ${typeof factory}`);
    if (opts.imports !== undefined && !Array.isArray(opts.imports)) throw new TypeError('options.imports must be an array');
    if (opts.inject !== undefined && !Array.isArray(opts.inject)) throw new TypeError('options.inject must be an array');
    return RunOnceModule.#module(opts.imports ?? [], opts.inject ?? [], async (...deps) => schedulerOf(await factory(...deps), {}, 'useFactory()'));
  }

  static #module(imports: unknown[], inject: unknown[], make: (...deps: unknown[]) => Promise<Scheduler>): RunOnceDynamicModule {
    return {
      module: RunOnceModule,
      global: true,
      imports: imports as never[],
      providers: [
        {
          provide: RUN_ONCE_SCHEDULER,
          inject: inject as never[],
          useFactory: async (...deps) => {
            current = await make(...deps);
            return current;
          },
        },
      ],
      exports: [RUN_ONCE_SCHEDULER],
    };
  }
}

/**
 * What the scheduler adapters share: where their claims go. Type-only imports of the core: each adapter is its own
 * entry point and works on the holdfast client (or scheduler) the application hands it, whichever copy of holdfast
 * (ESM or CJS) made it.
 *
 * @module
 */
import type { Holdfast } from '../holdfast.js';
import type { Scheduler, SchedulerOptions } from '../recipes/scheduler.js';

/** Where an adapter claims its ticks: a holdfast client (the adapter makes a scheduler of it) or a scheduler. */
export type ClaimSource = Holdfast | Scheduler;

/** The scheduler behind `source`: `source` itself, or a new one of the holdfast client `source` with `options`. */
export function schedulerOf(source: unknown, options: SchedulerOptions, what = 'holdfast'): Scheduler {
  const s = source as Partial<Scheduler> & Partial<Holdfast>;
  if (typeof source === 'object' && source !== null && typeof s.claim === 'function' && typeof s.run === 'function' && typeof s.fingerprint === 'string') {
    return source as Scheduler;
  }
  if (typeof source === 'object' && source !== null && typeof s.scheduler === 'function') return (source as Holdfast).scheduler(options);
  throw new TypeError(`${what} must be a holdfast client (new Holdfast(...)) or one of its schedulers, got ${source === null ? 'null' : typeof source}`);
}

/**
 * The tick of a fire that `cron` (and `@nestjs/schedule`, built on it) started now: the whole second it fired in.
 * Those libraries never fire early and resolve seconds at most, so every instance that fires the same tick on time
 * names it alike; a fire late by a second or more names a later tick (and `lockAtLeastFor` keeps it from running twice).
 */
export function tickOfFire(firedAt = Date.now()): number {
  return Math.floor(firedAt / 1000) * 1000;
}

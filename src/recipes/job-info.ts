/**
 * A scheduled job's record, as the scheduler reads it and the registry of kinds (src/kinds.ts) shows it. Kept apart from
 * the scheduler, with no import, so that the registry, which sits below the client and every primitive, can name it.
 *
 * @module
 */

/** A scheduled job's record in Redis, as `holdfast jobs` shows it (see {@link Holdfast.inspectJob}). */
export interface JobInfo {
  /** The job's name. */
  name: string;
  /** Its schedule as last claimed: a cron expression, or the adapter (`node-cron`, `nestjs`) when unknown. */
  schedule: string | null;
  /** The latest tick claimed (ISO time), run or running. */
  lastClaimedTick: string | null;
  /** The tick of the last finished run (ISO time). */
  lastRunTick: string | null;
  /** The fingerprint of the instance that made the last finished run. */
  lastRunBy: string | null;
  /** How long the last finished run took, in ms. */
  lastRunMs: number | null;
  /** When the last run finished (ISO time, Redis' clock). */
  lastRunFinishedAt: string | null;
  /** The last run's error message, `null` when it succeeded. */
  lastError: string | null;
  /** Failed runs in a row (0 after a success). */
  failuresInARow: number;
  /** Runs finished while the record was kept. */
  runs: number;
  /** Whether a claim holds the job now: a run is in progress (or its instance died within `lockAtMostFor`). */
  running: boolean;
  /** The fingerprint of the instance running it now. */
  runningOn: string | null;
  /** How long the run in progress has been going, in ms. */
  runningForMs: number | null;
  /** ms until the job can be claimed again (`lockAtMostFor` of a run in progress, or `lockAtLeastFor` after one), 0 when free. */
  lockedForMs: number;
}

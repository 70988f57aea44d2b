/**
 * The reference clock every process of the harness stamps its events with: the host's CLOCK_MONOTONIC, read through
 * `process.hrtime.bigint()` (libuv's `uv_hrtime`). One host, one clock: timestamps of different processes compare
 * directly, with no offset to estimate. `clock.test.ts` checks that claim across processes and measures how precisely
 * two processes' readings can be ordered.
 *
 * @module
 */

/** Reference time in ms (fractional, ns resolution): comparable across every process on this host. */
export function refNow(): number {
  return Number(process.hrtime.bigint()) / 1e6;
}

/**
 * `refNow() - performance.now()` in this process. Node's `performance.now()` counts from the process's time origin on
 * the same monotonic clock, so the difference is a constant; holdfast's deadlines (performance.now() based) convert
 * to reference time by adding it. Taken as the median of a few paired reads.
 */
export function perfOffset(): number {
  const samples: number[] = [];
  for (let i = 0; i < 9; i++) {
    const a = refNow();
    const p = performance.now();
    const b = refNow();
    samples.push((a + b) / 2 - p);
  }
  samples.sort((x, y) => x - y);
  return samples[4] ?? 0;
}

/** One round trip of the cross-process clock check: parent read before, child's read, parent read after. */
export interface ClockSample {
  before: number;
  child: number;
  after: number;
}

/** What a set of round trips says about sharing one clock. */
export interface ClockReport {
  samples: number;
  /** Samples where the child's reading fell outside the parent's [before, after]: 0 if the clock is shared. */
  outOfOrder: number;
  /** Half the smallest round trip: how precisely two processes' readings can be ordered, in ms. */
  uncertaintyMs: number;
  /** Median round trip, in ms. */
  medianRoundTripMs: number;
}

/** Summarises round trips (pure, for tests and the report). */
export function summariseClock(samples: readonly ClockSample[]): ClockReport {
  const trips = samples.map((s) => s.after - s.before).sort((a, b) => a - b);
  return {
    samples: samples.length,
    outOfOrder: samples.filter((s) => s.child < s.before || s.child > s.after).length,
    uncertaintyMs: (trips[0] ?? 0) / 2,
    medianRoundTripMs: trips[Math.floor(trips.length / 2)] ?? 0,
  };
}

/**
 * What the demo's workers report, and what it means: critical sections that overlapped, lost updates, locks
 * deleted from under another worker, stale writes a fence refused, and whether the lock was ever freed after a
 * crash. Pure functions over the event log, so they can be tested without Redis.
 *
 * @module
 */
import type { FaultId, ReleaseOutcome, SchemeId } from './schemes.js';

/** One thing a worker did, with an epoch-ms timestamp (all workers run on this machine: one clock). */
export type DemoEvent =
  | { t: number; w: string; type: 'acquired' }
  | { t: number; w: string; type: 'crashed' }
  | { t: number; w: string; type: 'paused'; from: number }
  | { t: number; w: string; type: 'written'; ok: boolean }
  | { t: number; w: string; type: 'skipped'; why: 'lost' | 'stale-read' }
  | { t: number; w: string; type: 'release-start' }
  | { t: number; w: string; type: 'released'; outcome: ReleaseOutcome }
  | { t: number; w: string; type: 'gave-up' }
  | { t: number; w: string; type: 'failed'; message: string };

/** A span of time on one worker's lane. */
export interface Span {
  w: string;
  start: number;
  end: number;
  /** `cs`: between the grant and the write (the critical section); `release`: the release command(s). */
  kind: 'cs' | 'release' | 'pause';
}

/** The measured outcome of one scheme under one fault. */
export interface RunResult {
  scheme: SchemeId;
  fault: FaultId;
  workers: number;
  startAt: number;
  endAt: number;
  /** Lock grants. */
  acquisitions: number;
  /** Counter writes Redis accepted. */
  writes: number;
  /** The counter at the end. */
  counter: number;
  /** Accepted writes that the counter does not show: `writes − counter`. */
  lostUpdates: number;
  /** Releases that deleted a lock another worker had acquired since. */
  deletedOthers: number;
  /** Writes (or reads) the fenced counter refused because a newer token had been used. */
  staleRejected: number;
  /** Releases holdfast refused because the lock was no longer this owner's. */
  refusedReleases: number;
  /** Pairs of critical sections that overlapped in time. */
  overlaps: number;
  /** Total time during which two or more workers were in their critical section, ms. */
  overlapMs: number;
  /** When the faulty worker crashed (epoch ms), if it did. */
  crashedAt: number | null;
  /** ms from the crash to the next grant; `null` when none came before the end. */
  recoveredAfterMs: number | null;
  /** The lock outlived its crashed holder for good: no grant after the crash, and the key has no TTL. */
  stuck: boolean;
  /** Workers whose wait ran into the end of the run. */
  gaveUp: number;
  /** Workers that failed with an error (the run's figures are then incomplete). */
  failures: string[];
  /** The worker lanes' spans, for the timeline. */
  spans: Span[];
  /** Spans of time when two or more critical sections overlapped. */
  overlapSpans: { start: number; end: number }[];
  /** Point events worth a marker: crashes, refused writes, deletions of another's lock. */
  marks: { t: number; w: string; kind: 'crash' | 'stale' | 'deleted-other' | 'refused' }[];
}

/** Inputs besides the events. */
export interface RunFacts {
  scheme: SchemeId;
  fault: FaultId;
  workers: number;
  startAt: number;
  endAt: number;
  counter: number;
  /** PTTL of the lock key after the run (-2 gone, -1 no TTL). */
  lockPttl: number;
}

/** Turns a run's events into its figures. */
export function analyze(events: readonly DemoEvent[], facts: RunFacts): RunResult {
  const sorted = [...events].sort((a, b) => a.t - b.t);
  const spans: Span[] = [];
  const marks: RunResult['marks'] = [];
  const open = new Map<string, { cs?: number; release?: number }>();
  let acquisitions = 0;
  let writes = 0;
  let deletedOthers = 0;
  let staleRejected = 0;
  let refusedReleases = 0;
  let gaveUp = 0;
  const failures: string[] = [];
  let crashedAt: number | null = null;
  let crashedWorker: string | null = null;

  const closeCs = (w: string, t: number) => {
    const o = open.get(w);
    if (o?.cs !== undefined) {
      spans.push({ w, start: o.cs, end: t, kind: 'cs' });
      delete o.cs;
    }
  };
  for (const e of sorted) {
    const o = open.get(e.w) ?? {};
    open.set(e.w, o);
    switch (e.type) {
      case 'acquired':
        acquisitions++;
        o.cs = e.t;
        break;
      case 'crashed':
        closeCs(e.w, e.t);
        crashedAt ??= e.t;
        crashedWorker ??= e.w;
        marks.push({ t: e.t, w: e.w, kind: 'crash' });
        break;
      case 'paused':
        spans.push({ w: e.w, start: e.from, end: e.t, kind: 'pause' });
        break;
      case 'written':
        if (e.ok) writes++;
        else {
          staleRejected++;
          marks.push({ t: e.t, w: e.w, kind: 'stale' });
        }
        closeCs(e.w, e.t);
        break;
      case 'skipped':
        if (e.why === 'stale-read') {
          staleRejected++;
          marks.push({ t: e.t, w: e.w, kind: 'stale' });
        }
        closeCs(e.w, e.t);
        break;
      case 'release-start':
        closeCs(e.w, e.t);
        o.release = e.t;
        break;
      case 'released':
        if (o.release !== undefined) spans.push({ w: e.w, start: o.release, end: e.t, kind: 'release' });
        delete o.release;
        if (e.outcome === 'deleted-other') {
          deletedOthers++;
          marks.push({ t: e.t, w: e.w, kind: 'deleted-other' });
        } else if (e.outcome === 'refused') {
          refusedReleases++;
          marks.push({ t: e.t, w: e.w, kind: 'refused' });
        }
        break;
      case 'gave-up':
        gaveUp++;
        break;
      case 'failed':
        closeCs(e.w, e.t);
        failures.push(`${e.w}: ${e.message}`);
        break;
    }
  }
  for (const [w] of open) closeCs(w, facts.endAt);

  const cs = spans.filter((s) => s.kind === 'cs').sort((a, b) => a.start - b.start);
  let overlaps = 0;
  for (let i = 0; i < cs.length; i++) {
    for (let j = i + 1; j < cs.length && cs[j]!.start < cs[i]!.end; j++) {
      if (cs[j]!.w !== cs[i]!.w) overlaps++;
    }
  }
  const overlapSpans = overlapOf(cs);
  const overlapMs = overlapSpans.reduce((sum, s) => sum + (s.end - s.start), 0);

  let recoveredAfterMs: number | null = null;
  if (crashedAt !== null) {
    const at = crashedAt;
    const next = sorted.find((e) => e.type === 'acquired' && e.t > at && e.w !== crashedWorker);
    recoveredAfterMs = next ? next.t - at : null;
  }
  return {
    scheme: facts.scheme,
    fault: facts.fault,
    workers: facts.workers,
    startAt: facts.startAt,
    endAt: facts.endAt,
    acquisitions,
    writes,
    counter: facts.counter,
    lostUpdates: writes - facts.counter,
    deletedOthers,
    staleRejected,
    refusedReleases,
    overlaps,
    overlapMs: Math.round(overlapMs),
    crashedAt,
    recoveredAfterMs: recoveredAfterMs === null ? null : Math.round(recoveredAfterMs),
    stuck: crashedAt !== null && recoveredAfterMs === null && facts.lockPttl === -1,
    gaveUp,
    failures,
    spans,
    overlapSpans,
    marks,
  };
}

/** The spans of time covered by two or more of `spans` (a sweep over start/end points). */
export function overlapOf(spans: readonly { start: number; end: number }[]): { start: number; end: number }[] {
  const points = spans.flatMap((s) => (s.end > s.start ? [{ t: s.start, d: 1 }, { t: s.end, d: -1 }] : []));
  points.sort((a, b) => a.t - b.t || a.d - b.d); // ends before starts at the same instant: touching is not overlapping
  const out: { start: number; end: number }[] = [];
  let depth = 0;
  let from = 0;
  for (const p of points) {
    const before = depth;
    depth += p.d;
    if (before < 2 && depth >= 2) from = p.t;
    if (before >= 2 && depth < 2 && p.t > from) out.push({ start: from, end: p.t });
  }
  return out;
}

/** A short verdict for the table. */
export function verdict(r: RunResult): string {
  const bad: string[] = [];
  if (r.stuck) bad.push('DEADLOCK');
  if (r.lostUpdates > 0) bad.push('LOST UPDATES');
  if (r.deletedOthers > 0) bad.push("DELETED OTHERS' LOCK");
  if (r.failures.length > 0) bad.push(`INCOMPLETE (${r.failures.length} worker error${r.failures.length > 1 ? 's' : ''})`);
  if (bad.length > 0) return bad.join(', ');
  if (r.staleRejected > 0) return 'ok: fencing refused the stale holder';
  if (r.overlaps > 0) return 'ok (overlap, no harm this time)';
  return 'ok';
}

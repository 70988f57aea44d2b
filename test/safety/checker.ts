/**
 * The history checker: pure functions from a recorded history (and the oracles' logs) to findings.
 *
 * - **Interval checker.** Each grant g owns `[start, end]`: `start` = its `acq.ok`; its *claim* ends at
 *   `min(rel.inv, validUntil, lost, kill of its worker)`; `end` = `max(claim end, end of its last use)` (a use that
 *   runs past the claim is still the worker acting as owner). Two grants of one lock whose intervals overlap by more
 *   than the timing uncertainty (`2 × uncertaintyMs`) are a violation; less is ambiguous. For a semaphore of
 *   `permits` permits (one per grant), the violation is `permits + 1` grants of different workers at once: a grant
 *   that starts while `permits` others still run, judged (overlap, claims, culprit) on that whole group. Every violation is
 *   classified: **expected** when a timing assumption was broken — the lock server lost its data, or the earlier
 *   holder was paused across its own deadline, or its critical section overran the margin it checked for — and a
 *   **bug** otherwise. Claims (what the library promised) may only overlap after data loss.
 * - **Tokens.** Two grants never share a token; a grant requested after another was granted gets a larger token
 *   (unless the server lost its data in between: expected). The same across a group of locks that share a counter
 *   (`tokenGroups`: the names of one Redis Cluster slot), from the acquisition's start.
 * - **Validity soundness.** A claimed `validUntil` is never later than `sendRef + leaseMs`: the earliest moment
 *   Redis could expire the key.
 * - **Release.** A release refused as "not held" while the lease was still valid and nothing was lost is a bug.
 * - **Liveness.** After a holder is killed, another worker acquires within `livenessBoundMs`; after a fault heals,
 *   someone acquires within `recoveryBoundMs`.
 * - **Resource oracles** ({@link checkResource}): stale writes the fenced resource accepted, stale writes an
 *   unfenced shadow let through (what fencing prevented), lost updates on both counters.
 *
 * @module
 */
import type { HistoryEvent, NemesisEvent } from './history.js';

export interface CheckOptions {
  /** Uncertainty of one timestamp, in ms (measured by the clock self-test, plus slack). */
  uncertaintyMs: number;
  /** A worker starts a use only when at least this many ms of its claim are left; a use taking longer overran. */
  useBudgetMs: number;
  /** After a holder is killed, another worker must acquire within this many ms. */
  livenessBoundMs: number;
  /** After a fault heals, some worker must acquire within this many ms. @default livenessBoundMs */
  recoveryBoundMs?: number;
  /** Reference time the run ended: a bound that had not elapsed by then is not judged. */
  endRef: number;
  /**
   * Where tokens come from. `single`: one counter (one Redis): only a loss of its data between two grants explains a
   * token going backwards. `quorum`: the largest of several nodes' counters (a majority lock): a node that lost its
   * counter at any earlier time can hand out smaller tokens later.
   * `none`: tokens carry no order promise (a naive majority lock's per-node counters diverge): not checked.
   * @default 'single'
   */
  tokenScope?: 'single' | 'quorum' | 'none';
  /** How many grants of one lock may run at once (a semaphore's permits, one per grant). @default 1 (mutual exclusion) */
  permits?: number;
  /**
   * Groups of locks that mint from one counter, by lock: e.g. every kind of lock on one name, and every name of one
   * Redis Cluster slot. Within a group, as within one lock, two grants never share a token and a grant whose
   * acquisition began after another was granted gets a larger token. (The acquisition's start, not its last request:
   * a waiter's token can be minted by the script that hands the lock over, before the waiter's own last request.)
   * Checked with the same data-loss exceptions as `tokenScope`. @default none
   */
  tokenGroups?: (lock: string) => readonly string[];
}

/** One grant as the checker sees it. */
export interface Grant {
  id: string;
  w: string;
  lock: string;
  /** When the acquisition began (its `acq.inv`; the send of the granted request when that is missing). */
  inv: number;
  start: number;
  token: number;
  sendRef: number;
  leaseMs: number;
  validUntil: number;
  claimEnd: number;
  end: number;
  uses: { inv: number; end: number; complete: boolean }[];
  lostRef: number | undefined;
  relInv: number | undefined;
}

export type ExpectedReason = 'data-loss' | 'client-paused' | 'use-overran';

export interface Overlap {
  lock: string;
  first: string;
  second: string;
  overlapMs: number;
  /**
   * With `permits` > 1: every grant of the group that ran at once with `second` (`first` is the one whose claim ended
   * first), `permits` of them.
   */
  group?: string[];
  /** True when the claims themselves overlapped (not only a use past its claim). */
  claims: boolean;
  verdict: 'expected' | 'bug' | 'ambiguous';
  reason: ExpectedReason | 'claims-overlap' | 'use-outside-claim' | 'within-uncertainty';
}

export interface Finding {
  kind: 'token-regress' | 'duplicate-token' | 'unsound-validity' | 'spurious-not-held' | 'liveness' | 'recovery';
  verdict: 'expected' | 'bug';
  detail: string;
}

export interface HistoryReport {
  /** Acquisitions (definite `acq.ok`) checked. */
  grants: number;
  /** Uses (protected operations) recorded. */
  uses: number;
  /** Faults injected (nemesis events). */
  faults: number;
  overlaps: Overlap[];
  findings: Finding[];
  counts: { expected: number; ambiguous: number; bug: number };
  /** Checks made (kills, healed faults, hand-offs to a waiter), whether every bound held, the worst latencies. */
  liveness: { checks: number; held: boolean; maxLatencyMs: number | null; maxHandoffMs: number | null };
  /** Lease renewals/extensions that succeeded or were refused, and losses the clients noticed. */
  leases: { extended: number; refused: number; lost: number };
}

const NOT_HELD = 'LOCK_NOT_HELD';

/** Builds grants from a history (events of every worker plus nemesis events, any order). */
export function buildGrants(events: readonly HistoryEvent[], endRef: number): Grant[] {
  const kills = new Map<string, number>();
  const invoked = new Map<string, number>();
  for (const e of events) {
    if (e.type === 'nemesis' && e.kind === 'kill-client') kills.set(e.target, Math.min(kills.get(e.target) ?? Infinity, e.from));
    else if (e.type === 'acq.inv') invoked.set(e.grant, e.ref);
  }
  const sorted = [...events].sort((a, b) => refOf(a) - refOf(b));
  const grants = new Map<string, Grant>();
  const openUses = new Map<string, { inv: number; end: number; complete: boolean }>();
  for (const e of sorted) {
    if (e.type === 'nemesis' || e.type === 'stall') continue;
    if (e.type === 'acq.ok') {
      grants.set(e.grant, {
        id: e.grant,
        w: e.w,
        lock: e.lock,
        inv: Math.min(invoked.get(e.grant) ?? e.sendRef, e.sendRef),
        start: e.ref,
        token: e.token,
        sendRef: e.sendRef,
        leaseMs: e.leaseMs,
        validUntil: e.validUntil,
        claimEnd: Infinity,
        end: Infinity,
        uses: [],
        lostRef: undefined,
        relInv: undefined,
      });
      continue;
    }
    const g = grants.get(e.grant);
    if (!g) continue;
    switch (e.type) {
      case 'ext.ok':
        // An extension only counts if it was asked for while the claim still stood: it never revives one.
        if (g.lostRef === undefined && g.relInv === undefined && e.sendRef < g.validUntil) g.validUntil = Math.max(g.validUntil, e.validUntil);
        break;
      case 'lost':
        g.lostRef ??= e.ref;
        break;
      case 'rel.inv':
        g.relInv ??= e.ref;
        break;
      case 'use.inv': {
        const use = { inv: e.ref, end: Infinity, complete: false };
        g.uses.push(use);
        openUses.set(e.grant, use);
        break;
      }
      case 'use.ok':
      case 'use.fail': {
        const use = openUses.get(e.grant);
        if (use) {
          use.end = e.ref;
          use.complete = true;
          openUses.delete(e.grant);
        }
        break;
      }
      default:
        break;
    }
  }
  for (const g of grants.values()) {
    const killed = kills.get(g.w);
    const dead = killed !== undefined && killed >= g.start ? killed : Infinity;
    g.claimEnd = Math.min(g.relInv ?? Infinity, g.validUntil, g.lostRef ?? Infinity, dead);
    // A use cut short by a kill ends at the kill; one never completed otherwise is open until the run ends.
    for (const u of g.uses) if (!u.complete) u.end = Math.min(dead, endRef);
    g.end = Math.max(g.claimEnd, ...g.uses.map((u) => u.end));
  }
  return [...grants.values()];
}

function refOf(e: HistoryEvent): number {
  return e.type === 'nemesis' || e.type === 'stall' ? e.from : e.ref;
}

/** Checks a history. */
export function checkHistory(events: readonly HistoryEvent[], opts: CheckOptions): HistoryReport {
  const u = opts.uncertaintyMs;
  const grants = buildGrants(events, opts.endRef);
  const nemeses = events.filter((e): e is NemesisEvent => e.type === 'nemesis');
  const dataLoss = nemeses.filter((n) => n.dataLoss);
  const lossBetween = (a: number, b: number) => dataLoss.some((n) => n.from >= a - u && n.from <= b + u);
  const pausesOf = (w: string) => [
    ...events.filter((e): e is Extract<HistoryEvent, { type: 'stall' }> => e.type === 'stall' && e.w === w),
    ...nemeses.filter((n) => n.kind === 'pause-client' && n.target === w),
  ];

  const overlaps: Overlap[] = [];
  const findings: Finding[] = [];
  const reported = new Set<string>();
  const report = (f: Finding, pair: string): void => {
    if (reported.has(pair)) return;
    reported.add(pair);
    findings.push(f);
  };
  /**
   * `list` (sorted by start): no two grants share a token; a grant requested (`requestOf`) after another was granted
   * has a larger token. `group` names a group of locks sharing a counter (a pair of one lock is the lock's own check).
   */
  const checkTokens = (list: readonly Grant[], requestOf: (g: Grant) => number, group?: string): void => {
    const where = group === undefined ? '' : ` (${group})`;
    const seen = new Map<number, Grant>();
    for (const g of list) {
      const other = seen.get(g.token);
      if (other) {
        const expected = lossBetween(opts.tokenScope === 'quorum' ? -Infinity : other.start, g.start);
        report(
          { kind: 'duplicate-token', verdict: expected ? 'expected' : 'bug', detail: `${other.id} and ${g.id} both got token ${g.token}${where}` },
          `dup ${other.id} ${g.id}`,
        );
      } else seen.set(g.token, g);
    }
    const byRequest = [...list].sort((a, b) => requestOf(a) - requestOf(b));
    let i = 0;
    let max: Grant | undefined;
    for (const h of byRequest) {
      while (i < list.length && list[i]!.start < requestOf(h) - u) {
        const g = list[i++]!;
        if (!max || g.token > max.token) max = g;
      }
      if (max && max !== h && max.token > h.token) {
        const expected = lossBetween(opts.tokenScope === 'quorum' ? -Infinity : max.start, h.start);
        report(
          {
            kind: 'token-regress',
            verdict: expected ? 'expected' : 'bug',
            detail: `${h.id} got token ${h.token} after ${max.id} was granted ${max.token}${where}`,
          },
          `regress ${h.id}`,
        );
      }
    }
  };
  const byLock = new Map<string, Grant[]>();
  for (const g of grants) pushTo(byLock, g.lock, g);

  const permits = opts.permits ?? 1;
  /** Judges `group` (grants still running) and `h` (starting) at once, overlapping for `overlapMs`. */
  const judge = (lock: string, group: Grant[], h: Grant, overlapMs: number): Overlap => {
    const claimOverlap = Math.min(h.claimEnd, ...group.map((g) => g.claimEnd)) - h.start;
    const claims = claimOverlap > 2 * u;
    // the grant whose claim ended first (with one other grant: `g` unless `h`'s claim ended before `g`'s)
    const culprit = [...group, h].reduce((a, b) => (b.claimEnd < a.claimEnd ? b : a));
    const first = group.reduce((a, b) => (b.claimEnd < a.claimEnd ? b : a));
    let verdict: Overlap['verdict'];
    let reason: Overlap['reason'];
    if (overlapMs <= 2 * u) {
      verdict = 'ambiguous';
      reason = 'within-uncertainty';
    } else if (lossBetween(Math.min(...group.map((g) => g.sendRef)), h.start)) {
      // (from the send: the grant's key is in Redis from when its request ran, which can be before its reply came
      // back, e.g. just before the server was killed and restarted empty)
      verdict = 'expected';
      reason = 'data-loss';
    } else if (claims) {
      verdict = 'bug';
      reason = 'claims-overlap';
    } else {
      // The overlap comes from uses past a claim's end (the culprit's).
      const late = culprit.uses.filter((x) => x.end > culprit.claimEnd + u);
      const windowFrom = culprit.claimEnd - opts.useBudgetMs;
      const paused = pausesOf(culprit.w).some((p) => p.to >= windowFrom && p.from <= culprit.end);
      if (paused) {
        verdict = 'expected';
        reason = 'client-paused';
      } else if (late.some((x) => x.end - x.inv > opts.useBudgetMs)) {
        verdict = 'expected';
        reason = 'use-overran';
      } else {
        verdict = 'bug';
        reason = 'use-outside-claim';
      }
    }
    const overlap: Overlap = { lock, first: first.id, second: h.id, overlapMs: round(overlapMs), claims, verdict, reason };
    if (permits > 1) overlap.group = group.map((g) => g.id);
    return overlap;
  };

  for (const [lock, list] of byLock) {
    list.sort((a, b) => a.start - b.start);
    // Sweep: `active` holds grants whose interval may still reach the next start.
    let active: Grant[] = [];
    for (const h of list) {
      active = active.filter((g) => g.end > h.start);
      if (permits === 1) {
        for (const g of active) {
          if (g.w === h.w) continue; // one worker is sequential: its own grants cannot overlap
          const overlapMs = Math.min(g.end, h.end) - h.start;
          if (overlapMs <= 0) continue;
          overlaps.push(judge(lock, [g], h, overlapMs));
        }
      } else {
        // the grant of each other worker that runs longest: `permits` of them with h make one holder too many
        const byWorker = new Map<string, Grant>();
        for (const g of active) if (g.w !== h.w && (byWorker.get(g.w)?.end ?? -Infinity) < g.end) byWorker.set(g.w, g);
        const group = [...byWorker.values()].sort((a, b) => b.end - a.end).slice(0, permits);
        if (group.length === permits) {
          const overlapMs = Math.min(h.end, ...group.map((g) => g.end)) - h.start;
          if (overlapMs > 0) overlaps.push(judge(lock, group, h, overlapMs));
        }
      }
      active.push(h);
    }

    // Tokens: unique, and increasing in real-time order of grant → request.
    if (opts.tokenScope !== 'none') checkTokens(list, (g) => g.sendRef);
  }

  // Counters shared by several locks: the same, across the locks of each group (from the acquisition's start).
  if (opts.tokenGroups && opts.tokenScope !== 'none') {
    const groups = new Map<string, Grant[]>();
    for (const g of grants) for (const key of opts.tokenGroups(g.lock)) pushTo(groups, key, g);
    for (const [key, list] of groups) checkTokens(list.sort((a, b) => a.start - b.start), (g) => g.inv, key);
  }

  // Validity soundness: the client never counts on more than the earliest possible expiry.
  for (const e of events) {
    if ((e.type === 'acq.ok' || e.type === 'ext.ok') && e.validUntil > e.sendRef + e.leaseMs + u) {
      findings.push({
        kind: 'unsound-validity',
        verdict: 'bug',
        detail: `${e.grant} ${e.type} claims ${round(e.validUntil - e.sendRef)} ms from the send of a ${e.leaseMs} ms lease`,
      });
    }
  }

  // A release refused as "not held" while nothing could have taken the lock is a bug.
  const grantById = new Map(grants.map((g) => [g.id, g]));
  for (const e of events) {
    if (e.type !== 'rel.fail' || e.code !== NOT_HELD) continue;
    const g = grantById.get(e.grant);
    if (!g || g.relInv === undefined) continue;
    if (g.lostRef !== undefined && g.lostRef <= g.relInv) continue; // the client knew before it released
    // The refusal came back before the claimed validity ended, so Redis ran the release while the key could not yet
    // have expired (its expiry is at the earliest `validUntil`). A release that ran later may have met an expired key.
    if (e.ref >= g.validUntil - u) continue;
    if (lossBetween(g.start, e.ref)) continue;
    findings.push({ kind: 'spurious-not-held', verdict: 'bug', detail: `${g.id} release refused as not held ${round(g.validUntil - e.ref)} ms before its lease ended` });
  }

  // Liveness after a crashed holder; recovery after every healed fault.
  const bound = opts.livenessBoundMs;
  const recovery = opts.recoveryBoundMs ?? bound;
  const starts = grants.map((g) => g).sort((a, b) => a.start - b.start);
  let checks = 0;
  let held = true;
  let maxLatency: number | null = null;
  const nextGrant = (after: number, notW?: string) => starts.find((g) => g.start > after && g.w !== notW);
  for (const n of nemeses) {
    if (n.kind === 'kill-client') {
      const holding = grants.find((g) => g.w === n.target && g.start <= n.from && (g.relInv ?? Infinity) > n.from && g.validUntil > n.from);
      if (!holding) continue;
      const limit = n.from + bound;
      const next = nextGrant(n.from, n.target);
      if (!next && limit > opts.endRef) continue;
      checks++;
      const latency = next ? next.start - n.from : Infinity;
      maxLatency = Math.max(maxLatency ?? 0, latency);
      if (latency > bound) {
        held = false;
        findings.push({ kind: 'liveness', verdict: 'bug', detail: `after ${n.target} was killed holding ${holding.id}, next grant after ${round(latency)} ms > ${bound} ms` });
      }
    } else if (n.kind !== 'pause-client') {
      const limit = n.to + recovery;
      const next = nextGrant(n.to);
      if (!next && limit > opts.endRef) continue;
      checks++;
      const latency = next ? next.start - n.to : Infinity;
      if (latency > recovery) {
        held = false;
        findings.push({ kind: 'recovery', verdict: 'bug', detail: `after ${n.kind} of ${n.target} healed, next grant after ${round(latency)} ms > ${recovery} ms` });
      }
    }
  }

  // Hand-off: with a worker waiting for the same lock and no fault around, a released or expired lock is granted
  // again within the bound.
  const outcomes = new Map<string, number>();
  const invocations = new Map<string, Extract<HistoryEvent, { type: 'acq.inv' }>[]>();
  for (const e of events) {
    if (e.type === 'acq.ok' || e.type === 'acq.fail' || e.type === 'acq.info') outcomes.set(e.grant, e.ref);
    else if (e.type === 'acq.inv') pushTo(invocations, e.lock, e);
  }
  let maxHandoff: number | null = null;
  for (const [lock, list] of byLock) {
    // (sorted by start by the sweep above)
    for (let k = 0; k + 1 < list.length; k++) {
      const g = list[k]!;
      const h = list[k + 1]!;
      const freed = g.claimEnd;
      if (!Number.isFinite(freed) || h.start <= freed) continue;
      const quiet = !nemeses.some((n) => n.from <= h.start && n.to + recovery >= freed - g.leaseMs);
      const waiting = (invocations.get(lock) ?? []).some((i) => i.w !== g.w && i.ref < freed && (outcomes.get(i.grant) ?? Infinity) > freed);
      if (!quiet || !waiting) continue;
      checks++;
      const gap = h.start - freed;
      maxHandoff = Math.max(maxHandoff ?? 0, gap);
      if (gap > bound) {
        held = false;
        findings.push({ kind: 'liveness', verdict: 'bug', detail: `${g.id} freed the lock at a time a worker waited; next grant ${h.id} after ${round(gap)} ms > ${bound} ms` });
      }
    }
  }

  const counts = { expected: 0, ambiguous: 0, bug: 0 };
  for (const o of overlaps) counts[o.verdict]++;
  for (const f of findings) counts[f.verdict]++;
  return {
    grants: grants.length,
    uses: grants.reduce((s, g) => s + g.uses.length, 0),
    faults: nemeses.length,
    overlaps,
    findings,
    counts,
    leases: {
      extended: events.filter((e) => e.type === 'ext.ok').length,
      refused: events.filter((e) => e.type === 'ext.fail').length,
      lost: events.filter((e) => e.type === 'lost').length,
    },
    liveness: { checks, held, maxLatencyMs: maxLatency === null ? null : round(maxLatency), maxHandoffMs: maxHandoff === null ? null : round(maxHandoff) },
  };
}

/** One operation in the fenced resource's log, in the order the resource applied it. */
export interface FencedOp {
  op: 'r' | 'w';
  token: number;
  grant: string;
  ok: boolean;
}

/** One write the unfenced shadow applied, in its order. */
export interface ShadowWrite {
  token: number;
  grant: string;
}

export interface ResourceState {
  fenced: readonly FencedOp[];
  shadow: readonly ShadowWrite[];
  /** Final value of the counter behind the fenced resource. */
  fencedCounter: number;
  /** Final value of the counter behind the shadow. */
  unfencedCounter: number;
}

export interface ResourceReport {
  fencedWrites: number;
  /** Reads/writes the fenced resource refused (stale token). */
  rejected: number;
  /** Accepted operations whose token was older than one already accepted (or equal, from another grant): must be 0. */
  staleAccepted: number;
  /** Writes the unfenced shadow applied with a token older than one it had already applied: what fencing prevented. */
  shadowStale: number;
  /** Acknowledged fenced increments missing from the fenced counter: must be 0. */
  lostFenced: number;
  /** Increments missing from the unfenced counter (lost updates without fencing). */
  lostUnfenced: number;
}

/** Checks the resource oracles' logs. */
export function checkResource(state: ResourceState): ResourceReport {
  let maxToken = -Infinity;
  let maxGrant = '';
  let staleAccepted = 0;
  let rejected = 0;
  let fencedWrites = 0;
  for (const op of state.fenced) {
    if (!op.ok) {
      rejected++;
      continue;
    }
    if (op.token < maxToken || (op.token === maxToken && op.grant !== maxGrant)) staleAccepted++;
    if (op.token >= maxToken) {
      maxToken = op.token;
      maxGrant = op.grant;
    }
    if (op.op === 'w') fencedWrites++;
  }
  let shadowMax = -Infinity;
  let shadowStale = 0;
  for (const w of state.shadow) {
    if (w.token < shadowMax) shadowStale++;
    shadowMax = Math.max(shadowMax, w.token);
  }
  return {
    fencedWrites,
    rejected,
    staleAccepted,
    shadowStale,
    lostFenced: fencedWrites - state.fencedCounter,
    lostUnfenced: state.shadow.length - state.unfencedCounter,
  };
}

function pushTo<T>(map: Map<string, T[]>, key: string, value: T): void {
  const list = map.get(key);
  if (list) list.push(value);
  else map.set(key, [value]);
}

function round(ms: number): number {
  return Math.round(ms * 100) / 100;
}

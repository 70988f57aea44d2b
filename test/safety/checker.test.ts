import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { checkHistory, checkResource, type CheckOptions } from './checker.js';
import type { HistoryEvent, NemesisEvent } from './history.js';

const opts: CheckOptions = { uncertaintyMs: 0.5, useBudgetMs: 60, livenessBoundMs: 1500, endRef: 100_000 };

interface GrantSpec {
  w: string;
  n?: number;
  lock?: string;
  inv?: number;
  ok: number;
  token: number;
  lease?: number;
  /** Claimed validity end; defaults to ok + lease - 10 */
  validUntil?: number;
  sendRef?: number;
  uses?: [number, number][];
  rel?: number;
  relFail?: string;
  lost?: number;
}

/** The events of one well-formed grant. */
function grant(s: GrantSpec): HistoryEvent[] {
  const id = `${s.w}#${s.n ?? 1}`;
  const lock = s.lock ?? 'L';
  const lease = s.lease ?? 1000;
  const sendRef = s.sendRef ?? s.ok - 1;
  const base = { w: s.w, grant: id };
  const events: HistoryEvent[] = [
    { ...base, type: 'acq.inv', ref: s.inv ?? sendRef, lock },
    { ...base, type: 'acq.ok', ref: s.ok, lock, token: s.token, validUntil: s.validUntil ?? sendRef + lease - 12, sendRef, leaseMs: lease },
  ];
  for (const [a, b] of s.uses ?? []) {
    events.push({ ...base, type: 'use.inv', ref: a, token: s.token }, { ...base, type: 'use.ok', ref: b, token: s.token, accepted: true });
  }
  if (s.lost !== undefined) events.push({ ...base, type: 'lost', ref: s.lost, reason: 'expired' });
  if (s.rel !== undefined) {
    events.push({ ...base, type: 'rel.inv', ref: s.rel });
    events.push(s.relFail ? { ...base, type: 'rel.fail', ref: s.rel + 1, code: s.relFail } : { ...base, type: 'rel.ok', ref: s.rel + 1 });
  }
  return events;
}

const nemesis = (n: Omit<NemesisEvent, 'type'>): NemesisEvent => ({ type: 'nemesis', ...n });

void describe('interval checker', () => {
  void test('a clean hand-off history has no overlap and no finding', () => {
    const r = checkHistory(
      [
        ...grant({ w: 'a', ok: 100, token: 1, uses: [[110, 150]], rel: 160 }),
        ...grant({ w: 'b', ok: 161, token: 2, uses: [[170, 200]], rel: 210 }),
        ...grant({ w: 'a', n: 2, ok: 212, token: 3, rel: 300 }),
      ],
      opts,
    );
    assert.equal(r.grants, 3);
    assert.equal(r.uses, 2);
    assert.deepEqual(r.overlaps, []);
    assert.deepEqual(r.findings, []);
    assert.deepEqual(r.counts, { expected: 0, ambiguous: 0, bug: 0 });
  });

  void test('two holders at once with no fault is a bug (claims overlap)', () => {
    const r = checkHistory([...grant({ w: 'a', ok: 100, token: 1, rel: 500 }), ...grant({ w: 'b', ok: 300, token: 2, rel: 600 })], opts);
    assert.equal(r.overlaps.length, 1);
    assert.equal(r.overlaps[0]?.verdict, 'bug');
    assert.equal(r.overlaps[0]?.reason, 'claims-overlap');
    assert.equal(r.overlaps[0]?.overlapMs, 200);
    assert.equal(r.counts.bug, 1);
  });

  void test('order of events in the file does not matter', () => {
    const events = [...grant({ w: 'a', ok: 100, token: 1, rel: 500 }), ...grant({ w: 'b', ok: 300, token: 2, rel: 600 })].reverse();
    assert.equal(checkHistory(events, opts).counts.bug, 1);
  });

  void test('an overlap within the clock uncertainty is ambiguous, not a bug', () => {
    const r = checkHistory([...grant({ w: 'a', ok: 100, token: 1, rel: 300.6 }), ...grant({ w: 'b', ok: 300, token: 2, rel: 600 })], opts);
    assert.equal(r.overlaps[0]?.verdict, 'ambiguous');
    assert.equal(r.counts.bug, 0);
  });

  void test('the claim ends at validUntil: a next holder after the lease is no overlap', () => {
    // a held a 1000 ms lease from 99 (valid until 1087) and never released; b takes over at 1200.
    const r = checkHistory([...grant({ w: 'a', ok: 100, token: 1 }), ...grant({ w: 'b', ok: 1200, token: 2, rel: 1300 })], opts);
    assert.deepEqual(r.overlaps, []);
  });

  void test('a use past the claim by a paused holder is an expected overlap', () => {
    const events = [
      // a: valid until 1087, its use started at 1000 and finished at 2600 after a SIGSTOP
      ...grant({ w: 'a', ok: 100, token: 1, uses: [[1000, 2600]], lost: 2601, rel: 2602, relFail: 'LOCK_NOT_HELD' }),
      ...grant({ w: 'b', ok: 1200, token: 2, uses: [[1210, 1300]], rel: 1400 }),
      nemesis({ kind: 'pause-client', target: 'a', from: 1010, to: 2590 }),
    ];
    const r = checkHistory(events, opts);
    assert.equal(r.overlaps.length, 1);
    assert.equal(r.overlaps[0]?.verdict, 'expected');
    assert.equal(r.overlaps[0]?.reason, 'client-paused');
    assert.equal(r.overlaps[0]?.claims, false);
    assert.equal(r.counts.bug, 0, JSON.stringify(r.findings));
  });

  void test("the worker's own stall record explains a pause as well as the nemesis log", () => {
    const events: HistoryEvent[] = [
      ...grant({ w: 'a', ok: 100, token: 1, uses: [[1000, 2600]] }),
      ...grant({ w: 'b', ok: 1200, token: 2, rel: 1400 }),
      { type: 'stall', w: 'a', from: 1020, to: 2580 },
    ];
    assert.equal(checkHistory(events, opts).overlaps[0]?.reason, 'client-paused');
  });

  void test('a pause of another worker does not excuse the holder', () => {
    const events = [
      ...grant({ w: 'a', ok: 100, token: 1, uses: [[1000, 1500]] }),
      ...grant({ w: 'b', ok: 1200, token: 2, rel: 1400 }),
      nemesis({ kind: 'pause-client', target: 'c', from: 1010, to: 1490 }),
    ];
    const r = checkHistory(events, opts);
    assert.equal(r.overlaps[0]?.verdict, 'expected');
    assert.equal(r.overlaps[0]?.reason, 'use-overran'); // 500 ms use > 60 ms budget, no pause
  });

  void test('a short use that still ends outside its claim, with no pause, is a bug', () => {
    const events = [...grant({ w: 'a', ok: 100, token: 1, uses: [[1080, 1130]] }), ...grant({ w: 'b', ok: 1100, token: 2, rel: 1400 })];
    const r = checkHistory(events, opts);
    assert.equal(r.overlaps[0]?.verdict, 'bug');
    assert.equal(r.overlaps[0]?.reason, 'use-outside-claim');
  });

  void test('a grant whose request ran just before the server was killed (reply after the kill) is covered by the data loss', () => {
    const events = [
      ...grant({ w: 'a', sendRef: 299, ok: 301, token: 46, rel: 800 }),
      nemesis({ kind: 'restart-server', target: 'lock', from: 300, to: 340, dataLoss: true }),
      ...grant({ w: 'b', ok: 350, token: 1, rel: 700 }),
    ];
    const r = checkHistory(events, opts);
    assert.equal(r.overlaps[0]?.verdict, 'expected');
    assert.equal(r.overlaps[0]?.reason, 'data-loss');
  });

  void test('claims that overlap after the lock server lost its data are expected', () => {
    const events = [
      ...grant({ w: 'a', ok: 100, token: 5, rel: 800 }),
      nemesis({ kind: 'restart-server', target: 'lock', from: 300, to: 350, dataLoss: true }),
      ...grant({ w: 'b', ok: 400, token: 1, rel: 700 }),
    ];
    const r = checkHistory(events, opts);
    assert.equal(r.overlaps[0]?.verdict, 'expected');
    assert.equal(r.overlaps[0]?.reason, 'data-loss');
    assert.ok(r.findings.some((f) => f.kind === 'token-regress' && f.verdict === 'expected'));
    assert.equal(r.counts.bug, 0);
  });

  void test('a restart that kept its data does not excuse an overlap', () => {
    const events = [
      ...grant({ w: 'a', ok: 100, token: 1, rel: 800 }),
      nemesis({ kind: 'restart-server', target: 'lock', from: 300, to: 350 }),
      ...grant({ w: 'b', ok: 400, token: 2, rel: 700 }),
    ];
    assert.equal(checkHistory(events, opts).overlaps[0]?.verdict, 'bug');
  });

  void test('an extension asked for after the claim ended does not revive it', () => {
    const events: HistoryEvent[] = [
      ...grant({ w: 'a', ok: 100, token: 1, validUntil: 600, lease: 600 }),
      { type: 'ext.ok', w: 'a', grant: 'a#1', ref: 640, validUntil: 1200, sendRef: 620, leaseMs: 600 },
      ...grant({ w: 'b', ok: 700, token: 2, rel: 800 }),
    ];
    assert.deepEqual(checkHistory(events, opts).overlaps, []);
    // ...while one asked for in time does extend the claim, so a second holder inside it is a bug.
    const inTime: HistoryEvent[] = [
      ...grant({ w: 'a', ok: 100, token: 1, validUntil: 600, lease: 600 }),
      { type: 'ext.ok', w: 'a', grant: 'a#1', ref: 560, validUntil: 1130, sendRef: 550, leaseMs: 600 },
      ...grant({ w: 'b', ok: 700, token: 2, rel: 800 }),
    ];
    assert.equal(checkHistory(inTime, opts).overlaps[0]?.reason, 'claims-overlap');
  });

  void test('a killed holder ends its claim at the kill', () => {
    const events = [
      ...grant({ w: 'a', ok: 100, token: 1 }),
      nemesis({ kind: 'kill-client', target: 'a', from: 200, to: 200 }),
      ...grant({ w: 'b', ok: 300, token: 2, rel: 400 }),
    ];
    // b got it while a's lease would still run: not an overlap because a is dead.
    assert.deepEqual(checkHistory(events, opts).overlaps, []);
  });
});

void describe('tokens, validity and release', () => {
  void test('a token that goes backwards with no data loss is a bug', () => {
    const r = checkHistory([...grant({ w: 'a', ok: 100, token: 7, rel: 200 }), ...grant({ w: 'b', ok: 300, token: 3, rel: 400 })], opts);
    assert.deepEqual(
      r.findings.map((f) => [f.kind, f.verdict]),
      [['token-regress', 'bug']],
    );
  });

  void test('quorum tokens: a node reset before both grants explains a regress; a single counter does not', () => {
    const events = [
      nemesis({ kind: 'restart-server', target: 'node-b', from: 50, to: 60, dataLoss: true }),
      ...grant({ w: 'a', ok: 100, token: 10, rel: 200 }),
      ...grant({ w: 'b', ok: 300, token: 5, rel: 400 }),
    ];
    assert.equal(checkHistory(events, { ...opts, tokenScope: 'quorum' }).counts.bug, 0);
    assert.equal(checkHistory(events, opts).counts.bug, 1);
    // tokens with no order promise are not checked at all
    assert.deepEqual(checkHistory(events, { ...opts, tokenScope: 'none' }).findings, []);
  });

  void test('a duplicate token is a bug', () => {
    const r = checkHistory([...grant({ w: 'a', ok: 100, token: 4, rel: 200 }), ...grant({ w: 'b', ok: 300, token: 4, rel: 400 })], opts);
    assert.ok(r.findings.some((f) => f.kind === 'duplicate-token' && f.verdict === 'bug'));
  });

  void test('concurrent requests may get tokens in either order', () => {
    // b sent its request before a's grant came back: no real-time order between them.
    const r = checkHistory([...grant({ w: 'a', ok: 100, token: 9, sendRef: 90, rel: 200 }), ...grant({ w: 'b', ok: 300, token: 8, sendRef: 95, inv: 95, rel: 400 })], opts);
    assert.deepEqual(r.findings, []);
  });

  void test('locks that share a counter (tokenGroups): tokens increase across them from the acquisition start', () => {
    const slot = { ...opts, tokenGroups: (lock: string) => [`slot of ${lock}`.replace(/[AB]$/, 'AB')] };
    // B's acquisition began after A's grant: its token must be larger, though B is another lock
    const back = checkHistory([...grant({ w: 'a', lock: 'A', ok: 100, token: 7, rel: 200 }), ...grant({ w: 'b', lock: 'B', inv: 150, ok: 160, token: 3, rel: 300 })], slot);
    assert.deepEqual(
      back.findings.map((f) => [f.kind, f.verdict]),
      [['token-regress', 'bug']],
    );
    assert.match(back.findings[0]!.detail, /slot of AB/);
    assert.equal(back.overlaps.length, 0, 'two locks: no overlap');
    // the same tokens without a group, or in different groups, are no finding
    assert.deepEqual(checkHistory([...grant({ w: 'a', lock: 'A', ok: 100, token: 7, rel: 200 }), ...grant({ w: 'b', lock: 'B', inv: 150, ok: 160, token: 3, rel: 300 })], opts).findings, []);
    // a shared counter never hands out one token twice
    const dup = checkHistory([...grant({ w: 'a', lock: 'A', ok: 100, token: 4, rel: 110 }), ...grant({ w: 'b', lock: 'B', ok: 100, token: 4, rel: 120 })], slot);
    assert.deepEqual(
      dup.findings.map((f) => f.kind),
      ['duplicate-token'],
    );
    // B began (inv 90) before A was granted: its token was minted at some point of its acquisition, either order is fine,
    // even though its last request (sendRef 150) came after A's grant (a hand-off can mint before the waiter's last request)
    const waited = checkHistory(
      [...grant({ w: 'a', lock: 'A', ok: 100, token: 7, rel: 200 }), ...grant({ w: 'b', lock: 'B', inv: 90, sendRef: 150, ok: 160, token: 3, rel: 300 })],
      slot,
    );
    assert.deepEqual(waited.findings, []);
    // a data loss in between explains it
    const lost = checkHistory(
      [
        ...grant({ w: 'a', lock: 'A', ok: 100, token: 7, rel: 200 }),
        nemesis({ kind: 'restart-server', target: 'n', from: 120, to: 130, dataLoss: true }),
        ...grant({ w: 'b', lock: 'B', inv: 150, ok: 160, token: 3, rel: 300 }),
      ],
      slot,
    );
    assert.deepEqual(
      lost.findings.map((f) => f.verdict),
      ['expected'],
    );
  });

  void test('one backward token is reported once, whichever groups see it', () => {
    const groups = { ...opts, tokenGroups: () => ['name n', 'slot 1'] };
    const r = checkHistory([...grant({ w: 'a', ok: 100, token: 7, rel: 200 }), ...grant({ w: 'b', ok: 300, token: 3, rel: 400 })], groups);
    assert.equal(r.findings.length, 1);
  });

  void test('a validity longer than the lease from the send is unsound', () => {
    const r = checkHistory(grant({ w: 'a', ok: 100, sendRef: 95, validUntil: 1100, token: 1, rel: 200 }), opts);
    assert.deepEqual(
      r.findings.map((f) => f.kind),
      ['unsound-validity'],
    );
  });

  void test('a release refused as not held inside a valid lease is a bug, after a loss it is not', () => {
    const spurious = checkHistory(grant({ w: 'a', ok: 100, token: 1, rel: 300, relFail: 'LOCK_NOT_HELD' }), opts);
    assert.equal(spurious.findings[0]?.kind, 'spurious-not-held');
    const afterLoss = checkHistory(grant({ w: 'a', ok: 100, token: 1, lost: 250, rel: 300, relFail: 'LOCK_NOT_HELD' }), opts);
    assert.deepEqual(afterLoss.findings, []);
    // a loss noticed only because the release itself was refused does not excuse it
    const events = grant({ w: 'a', ok: 100, token: 1, rel: 300, relFail: 'LOCK_NOT_HELD' });
    events.push({ type: 'lost', w: 'a', grant: 'a#1', ref: 300.5, reason: 'expired' });
    assert.equal(checkHistory(events, opts).findings[0]?.kind, 'spurious-not-held');
    // a release sent inside the lease whose retries only reached Redis after the lease ended may be refused
    const late = grant({ w: 'a', ok: 100, token: 1 });
    late.push({ type: 'rel.inv', w: 'a', grant: 'a#1', ref: 300 }, { type: 'rel.fail', w: 'a', grant: 'a#1', ref: 1200, code: 'LOCK_NOT_HELD' });
    assert.deepEqual(checkHistory(late, opts).findings, []);
  });
});

void describe('liveness', () => {
  void test('a killed holder is replaced within the bound', () => {
    const events = [
      ...grant({ w: 'a', ok: 100, token: 1 }),
      nemesis({ kind: 'kill-client', target: 'a', from: 200, to: 200 }),
      ...grant({ w: 'b', ok: 1150, token: 2, rel: 1200 }),
    ];
    const r = checkHistory(events, opts);
    assert.deepEqual(r.liveness, { checks: 1, held: true, maxLatencyMs: 950, maxHandoffMs: null });
  });

  void test('a lock leaked past the bound is reported', () => {
    const events = [
      ...grant({ w: 'a', ok: 100, token: 1 }),
      nemesis({ kind: 'kill-client', target: 'a', from: 200, to: 200 }),
      ...grant({ w: 'b', ok: 5000, token: 2, rel: 5100 }),
    ];
    const r = checkHistory(events, opts);
    assert.equal(r.liveness.held, false);
    assert.equal(r.findings[0]?.kind, 'liveness');
    assert.equal(r.counts.bug, 1);
  });

  void test('a lock left idle while a worker waits, with no fault around, breaks the hand-off bound', () => {
    const slow = checkHistory(
      [...grant({ w: 'a', ok: 100, token: 1, rel: 200 }), ...grant({ w: 'b', inv: 150, sendRef: 2900, ok: 3000, token: 2, rel: 3100 })],
      opts,
    );
    assert.equal(slow.liveness.held, false);
    assert.equal(slow.findings[0]?.kind, 'liveness');
    const fast = checkHistory([...grant({ w: 'a', ok: 100, token: 1, rel: 200 }), ...grant({ w: 'b', inv: 150, sendRef: 202, ok: 203, token: 2, rel: 300 })], opts);
    assert.deepEqual(fast.liveness, { checks: 1, held: true, maxLatencyMs: null, maxHandoffMs: 3 });
  });

  void test('the hand-off bound is per lock: a waiter on another lock does not count', () => {
    const r = checkHistory(
      [...grant({ w: 'a', lock: 'L', ok: 100, token: 1, rel: 200 }), ...grant({ w: 'b', lock: 'M', inv: 150, sendRef: 2900, ok: 3000, token: 2, rel: 3100 })],
      opts,
    );
    assert.equal(r.liveness.held, true);
    assert.equal(r.liveness.checks, 0);
  });

  void test('no grant at all after a healed fault breaks recovery', () => {
    const events = [...grant({ w: 'a', ok: 100, token: 1, rel: 150 }), nemesis({ kind: 'pause-server', target: 'lock', from: 200, to: 2000 })];
    const r = checkHistory(events, { ...opts, endRef: 10_000 });
    assert.equal(r.liveness.held, false);
    assert.equal(r.findings[0]?.kind, 'recovery');
    // ...but a run that ended before the bound elapsed is not judged.
    assert.equal(checkHistory(events, { ...opts, endRef: 2500 }).liveness.held, true);
  });
});

void describe('resource oracles', () => {
  void test('a well-behaved fenced resource and counters', () => {
    const r = checkResource({
      fenced: [
        { op: 'r', token: 1, grant: 'a#1', ok: true },
        { op: 'w', token: 1, grant: 'a#1', ok: true },
        { op: 'r', token: 2, grant: 'b#1', ok: true },
        { op: 'w', token: 1, grant: 'a#1', ok: false },
        { op: 'w', token: 2, grant: 'b#1', ok: true },
      ],
      shadow: [
        { token: 1, grant: 'a#1' },
        { token: 2, grant: 'b#1' },
      ],
      fencedCounter: 2,
      unfencedCounter: 2,
    });
    assert.deepEqual(r, { fencedWrites: 2, rejected: 1, staleAccepted: 0, shadowStale: 0, lostFenced: 0, lostUnfenced: 0 });
  });

  void test('a resource that accepted a stale token, or the same token from another grant, is caught', () => {
    const r = checkResource({
      fenced: [
        { op: 'w', token: 5, grant: 'a#1', ok: true },
        { op: 'w', token: 4, grant: 'b#1', ok: true },
        { op: 'w', token: 5, grant: 'c#1', ok: true },
      ],
      shadow: [],
      fencedCounter: 3,
      unfencedCounter: 0,
    });
    assert.equal(r.staleAccepted, 2);
  });

  void test('the shadow shows stale writes and lost updates that fencing prevented', () => {
    const r = checkResource({
      fenced: [{ op: 'w', token: 2, grant: 'b#1', ok: true }],
      shadow: [
        { token: 2, grant: 'b#1' },
        { token: 1, grant: 'a#1' },
      ],
      fencedCounter: 1,
      unfencedCounter: 1,
    });
    assert.equal(r.shadowStale, 1);
    assert.equal(r.lostUnfenced, 1);
    assert.equal(r.lostFenced, 0);
  });

  void test('a counter missing acknowledged increments shows lost updates', () => {
    const r = checkResource({
      fenced: [
        { op: 'w', token: 1, grant: 'a#1', ok: true },
        { op: 'w', token: 2, grant: 'b#1', ok: true },
      ],
      shadow: [],
      fencedCounter: 1,
      unfencedCounter: 0,
    });
    assert.equal(r.lostFenced, 1);
  });
});

void describe('interval checker with a permit count (semaphores)', () => {
  const two: CheckOptions = { ...opts, permits: 2, tokenScope: 'none' };

  void test('as many holders as permits is no violation', () => {
    const r = checkHistory([...grant({ w: 'a', ok: 100, token: 0, rel: 500 }), ...grant({ w: 'b', ok: 200, token: 0, rel: 600 }), ...grant({ w: 'c', ok: 550, token: 0, rel: 700 })], two);
    assert.deepEqual(r.overlaps, []);
    assert.deepEqual(r.counts, { expected: 0, ambiguous: 0, bug: 0 });
  });

  void test('one holder more than permits is a bug, judged on the whole group', () => {
    const r = checkHistory(
      [...grant({ w: 'a', ok: 100, token: 0, rel: 500 }), ...grant({ w: 'b', ok: 200, token: 0, rel: 450 }), ...grant({ w: 'c', ok: 300, token: 0, rel: 700 })],
      two,
    );
    assert.equal(r.overlaps.length, 1);
    const o = r.overlaps[0]!;
    assert.equal(o.verdict, 'bug');
    assert.equal(o.reason, 'claims-overlap');
    assert.equal(o.second, 'c#1');
    assert.equal(o.first, 'b#1', 'the claim that ended first');
    assert.deepEqual(new Set(o.group), new Set(['a#1', 'b#1']));
    assert.equal(o.overlapMs, 150);
  });

  void test('the same worker never counts twice, and a data loss explains the extra holder', () => {
    const r = checkHistory(
      [
        ...grant({ w: 'a', ok: 100, token: 0, uses: [[110, 700]], rel: 150 }),
        ...grant({ w: 'a', n: 2, ok: 160, token: 0, rel: 600 }),
        ...grant({ w: 'b', ok: 200, token: 0, rel: 600 }),
      ],
      two,
    );
    assert.deepEqual(r.overlaps, [], "a's two grants are one worker: two holders");
    const lost = checkHistory(
      [
        ...grant({ w: 'a', ok: 100, token: 0, rel: 500 }),
        ...grant({ w: 'b', ok: 120, token: 0, rel: 500 }),
        nemesis({ kind: 'restart-server', target: 'n', from: 150, to: 160, dataLoss: true }),
        ...grant({ w: 'c', ok: 200, token: 0, rel: 500 }),
      ],
      two,
    );
    assert.equal(lost.overlaps[0]?.verdict, 'expected');
    assert.equal(lost.overlaps[0]?.reason, 'data-loss');
  });
});

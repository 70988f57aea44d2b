import assert from 'node:assert/strict';
import { test } from 'node:test';
import { perfOffset, refNow, summariseClock } from './clock.js';
import { measureCrossProcessClock } from './clock-check.js';

void test('reference clock is shared across processes: every child reading falls inside the parent window', async () => {
  const report = await measureCrossProcessClock(100);
  assert.equal(report.samples, 100);
  assert.equal(report.outOfOrder, 0, `child readings out of order: ${JSON.stringify(report.raw.filter((s) => s.child < s.before || s.child > s.after))}`);
  // The window is a real IPC round trip: sub-millisecond on one host, a few ms under load.
  assert.ok(report.uncertaintyMs < 5, `uncertainty ${report.uncertaintyMs} ms`);
});

void test('performance.now() converts to reference time with a constant offset', async () => {
  const offset = perfOffset();
  await new Promise((r) => setTimeout(r, 30));
  const ref = refNow();
  const converted = performance.now() + offset;
  assert.ok(Math.abs(converted - ref) < 1, `drift ${converted - ref} ms`);
  assert.ok(Math.abs(perfOffset() - offset) < 0.5);
});

void test('summariseClock counts out-of-order samples (a blind clock check would not)', () => {
  const r = summariseClock([
    { before: 10, child: 11, after: 12 },
    { before: 20, child: 19, after: 22 },
    { before: 30, child: 31, after: 30.5 },
  ]);
  assert.equal(r.outOfOrder, 2);
  assert.equal(r.uncertaintyMs, 0.25);
});

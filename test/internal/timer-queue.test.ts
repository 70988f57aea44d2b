/**
 * The shared lease timer queue: calls come due in time order on real timers, cancelled entries never fire, dead
 * entries are compacted away, and a call that throws does not stop the others.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { now } from '../../src/internal/clock.js';
import { TimerQueue } from '../../src/internal/timer-queue.js';

describe('TimerQueue', () => {
  it('fires entries in time order, not before they are due', async () => {
    const q = new TimerQueue(now);
    const fired: [string, number][] = [];
    const start = now();
    const at = (label: string, ms: number) => q.add(start + ms, { due: () => fired.push([label, now() - start]) });
    at('c', 60);
    at('a', 20);
    at('b', 40);
    await sleep(120);
    assert.deepEqual(
      fired.map(([l]) => l),
      ['a', 'b', 'c'],
    );
    for (const [label, t] of fired) assert.ok(t >= { a: 20, b: 40, c: 60 }[label]! - 1, `${label} fired at ${t.toFixed(1)} ms`);
    assert.equal(q.size, 0);
  });

  it('never fires a cancelled entry, also when it was the earliest', async () => {
    const q = new TimerQueue(now);
    const fired: string[] = [];
    const first = q.add(now() + 15, { due: () => fired.push('first') });
    q.add(now() + 30, { due: () => fired.push('second') });
    q.cancel(first);
    q.cancel(first); // idempotent
    await sleep(60);
    assert.deepEqual(fired, ['second']);
  });

  it('compacts dead entries once they outnumber the live ones', () => {
    const q = new TimerQueue(now);
    const keep = q.add(now() + 60_000, { due: () => {} });
    for (let i = 0; i < 1000; i++) q.cancel(q.add(now() + 10_000 + i, { due: () => {} }));
    assert.ok(q.size < 200, `size ${q.size} after 1000 cancelled entries`);
    q.cancel(keep);
  });

  it('a throwing target does not stop the others', async () => {
    const q = new TimerQueue(now);
    const fired: string[] = [];
    q.add(now() + 10, {
      due: () => {
        throw new Error('boom');
      },
    });
    q.add(now() + 10, { due: () => fired.push('ok') });
    await sleep(40);
    assert.deepEqual(fired, ['ok']);
  });
});

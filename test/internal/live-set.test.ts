/**
 * The live set behind a client's holds and the commands in flight: membership, size, freed slots reused (the array
 * never grows past the most members at once), a walk that tolerates deletions, and drain.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { LiveSet, liveSlot, type Slotted } from '../../src/internal/live-set.js';

const item = (id: number): Slotted & { id: number } => ({ id, [liveSlot]: undefined });

describe('LiveSet', () => {
  it('adds, finds and deletes; a second add or delete is a no-op', () => {
    const s = new LiveSet<ReturnType<typeof item>>();
    const a = item(1);
    const b = item(2);
    s.add(a).add(b).add(a);
    assert.equal(s.size, 2);
    assert.ok(s.has(a) && s.has(b));
    assert.equal(s.delete(a), true);
    assert.equal(s.delete(a), false);
    assert.equal(s.has(a), false);
    assert.equal(a[liveSlot], undefined);
    assert.deepEqual([...s].map((x) => x.id), [2]);
  });

  it('reuses freed slots: 10,000 add/delete cycles with 8 members at once use 8 slots', () => {
    const s = new LiveSet<ReturnType<typeof item>>();
    const live: ReturnType<typeof item>[] = [];
    let maxSlot = 0;
    for (let i = 0; i < 10_000; i++) {
      const x = item(i);
      s.add(x);
      maxSlot = Math.max(maxSlot, x[liveSlot] ?? -1);
      live.push(x);
      if (live.length === 8) s.delete(live.splice(i % 8, 1)[0]!);
    }
    assert.equal(s.size, 7);
    assert.equal(maxSlot, 7);
  });

  it('walks every member, also when the walk deletes the one it is at', () => {
    const s = new LiveSet<ReturnType<typeof item>>();
    const xs = Array.from({ length: 5 }, (_, i) => item(i));
    for (const x of xs) s.add(x);
    const seen: number[] = [];
    s.forEach((x) => {
      seen.push(x.id);
      if (x.id % 2 === 0) s.delete(x);
    });
    assert.deepEqual(seen, [0, 1, 2, 3, 4]);
    assert.deepEqual([...s].map((x) => x.id), [1, 3]);
  });

  it('drain empties it and returns every member once', () => {
    const s = new LiveSet<ReturnType<typeof item>>();
    const xs = Array.from({ length: 4 }, (_, i) => item(i));
    for (const x of xs) s.add(x);
    s.delete(xs[1]!);
    assert.deepEqual(s.drain().map((x) => x.id), [0, 2, 3]);
    assert.equal(s.size, 0);
    assert.equal(xs[0]![liveSlot], undefined);
    s.add(xs[0]!);
    assert.equal(s.size, 1);
  });
});

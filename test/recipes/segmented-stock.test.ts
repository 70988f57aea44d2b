import { it } from 'node:test';
import assert from 'node:assert/strict';
import { describeEachAdapter } from '../support/suite.js';

describeEachAdapter('SegmentedStock', (ctx) => {
  void it('set spreads the stock evenly and available reads it in one step', async () => {
    const stock = ctx.holdfast.segmentedStock('spread', { segments: 4 });
    assert.equal(stock.segments, 4);
    await stock.set(10);
    assert.deepEqual(await stock.availableBySegment(), { total: 10, segments: [3, 3, 2, 2] });
    assert.equal(await stock.available(), 10);
    await stock.set(0);
    assert.equal(await stock.available(), 0);
  });

  void it('takes from one segment, moves on when it is short, and combines segments', async () => {
    const stock = ctx.holdfast.segmentedStock('combine', { segments: 4 });
    await stock.set(8); // [2, 2, 2, 2]
    assert.equal(await stock.take(2), true); // one segment has it
    assert.equal(await stock.take(5), true); // no segment has 5: combined from three
    assert.equal(await stock.available(), 1);
    assert.equal(await stock.take(2), false, 'refused: only 1 left');
    assert.equal(await stock.available(), 1, 'a refusal changes nothing');
    assert.equal(await stock.take(1), true);
    assert.equal(await stock.take(1), false);
    const { segments } = await stock.availableBySegment();
    assert.deepEqual(segments, [0, 0, 0, 0]);
  });

  void it('never refuses while enough stock remains, whatever segment a take starts at', async () => {
    const stock = ctx.holdfast.segmentedStock('lonely', { segments: 16 });
    await stock.set(0);
    await stock.restock(1); // one unit in one of 16 segments
    for (let i = 0; i < 20; i++) {
      assert.equal(await stock.take(1), true, `take ${i} found the one unit`);
      await stock.restock(1);
    }
  });

  void it('restock adds evenly and returns the new total', async () => {
    const stock = ctx.holdfast.segmentedStock('restock', { segments: 3 });
    await stock.set(3);
    assert.equal(await stock.restock(7), 10);
    const { segments } = await stock.availableBySegment();
    assert.equal(segments.reduce((a, b) => a + b), 10);
    assert.ok(Math.max(...segments) - Math.min(...segments) <= 1, `even: ${segments.join(',')}`);
    assert.equal(await stock.restock(0), 10);
  });

  void it('one segment works like a plain counter', async () => {
    const stock = ctx.holdfast.segmentedStock('single', { segments: 1 });
    await stock.set(3);
    assert.equal(await stock.take(2), true);
    assert.equal(await stock.take(2), false);
    assert.equal(await stock.take(1), true);
    assert.equal(await stock.available(), 0);
  });

  void it('300 concurrent takes drain the stock to exactly zero without overselling', async () => {
    const stock = ctx.holdfast.segmentedStock('rush', { segments: 8 });
    await stock.set(400);
    const sizes = Array.from({ length: 300 }, (_, i) => 1 + (i % 3)); // asks for 600 in total
    const results = await Promise.all(sizes.map((n) => stock.take(n)));
    const taken = sizes.reduce((sum, n, i) => sum + (results[i] ? n : 0), 0);
    const left = await stock.available();
    assert.equal(taken + left, 400);
    assert.ok(left < 3, `refused only when fewer than asked remained (left ${left})`);
    const { segments } = await stock.availableBySegment();
    for (const s of segments) assert.ok(s >= 0);
  });

  void it('rejects bad arguments before touching Redis', async () => {
    assert.throws(() => ctx.holdfast.segmentedStock(''), RangeError);
    assert.throws(() => ctx.holdfast.segmentedStock('x', { segments: 0 }), RangeError);
    assert.throws(() => ctx.holdfast.segmentedStock('x', { segments: 2000 }), RangeError);
    assert.throws(() => ctx.holdfast.segmentedStock('x', { segments: 2.5 }), RangeError);
    assert.throws(() => ctx.holdfast.segmentedStock('x', { segment: 2 } as never), TypeError);
    const stock = ctx.holdfast.segmentedStock('x');
    assert.equal(stock.segments, 8);
    await assert.rejects(stock.take(0), RangeError);
    await assert.rejects(stock.take(1.5), RangeError);
    await assert.rejects(stock.take('1' as never), TypeError);
    await assert.rejects(stock.restock(-1), RangeError);
    await assert.rejects(stock.set(Number.NaN), RangeError);
  });
}, { notOnPostgres: 'the segmented stock is a Redis-only recipe' });

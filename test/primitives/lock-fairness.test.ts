/**
 * The plain Lock across clients: a release reserves the lock for a moment for the waiter of another client that has
 * waited longest, so a releaser that loops cannot keep the others out (it used to win nearly every race).
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { Holdfast } from '../../src/index.js';
import { scripts } from '../../src/lua/scripts.gen.js';
import { describeEachAdapter, sleep } from '../support/suite.js';

/** Lists `owner` as a waiter of the lock `name` since `since` (ms): what a waiter's first attempt does, by the store's own operation. */
async function listWaiter(holdfast: Holdfast, name: string, owner: string, since: number): Promise<void> {
  const { keys } = holdfast.core;
  await holdfast.core.run(scripts['lock/acquire'], [keys.lock(name), keys.fence(name), keys.lockWaiters(name)], [owner, 30_000, '1', String(since)]);
}

/** How many waiters the lock `name` lists. */
async function waiterCount(holdfast: Holdfast, name: string): Promise<number> {
  const [, count] = await holdfast.core.run(scripts['lock/waiters'], [holdfast.core.keys.lockWaiters(name)], [100]);
  return Number(count);
}

describeEachAdapter('Lock across clients', (ctx) => {
  test('four clients looping on one lock all get it, none is kept out', async () => {
    const prefix = `lf${Math.random().toString(36).slice(2, 7)}:`;
    const clients = await Promise.all(Array.from({ length: 4 }, () => ctx.open({ prefix })));
    const counts = clients.map(() => 0);
    let longest = 0;
    const until = performance.now() + 1500;
    await Promise.all(
      clients.map(async ({ holdfast }, i) => {
        const lock = holdfast.lock('shared');
        while (performance.now() < until) {
          const t0 = performance.now();
          const held = await lock.acquire({ timeout: 5000 });
          longest = Math.max(longest, performance.now() - t0);
          counts[i]!++;
          await sleep(1);
          await held.release();
        }
      }),
    );
    const total = counts.reduce((a, b) => a + b, 0);
    const jain = total ** 2 / (counts.length * counts.reduce((a, b) => a + b * b, 0));
    assert.ok(total > 40, `only ${total} acquisitions`);
    assert.ok(jain >= 0.8, `Jain ${jain.toFixed(3)} over ${counts.join('/')}`);
    for (const c of counts) assert.ok(c >= total / 10, `a client was kept out: ${counts.join('/')}`);
    assert.ok(longest < 1000, `longest wait ${Math.round(longest)} ms`);
  });

  test('a reservation for a waiter that is gone lapses: the others get the lock within a moment', async () => {
    const prefix = `lg${Math.random().toString(36).slice(2, 7)}:`;
    const a = await ctx.open({ prefix });
    const b = await ctx.open({ prefix });
    const held = await a.holdfast.lock('gone').acquire();
    const waiting = b.holdfast.lock('gone').acquire({ timeout: 5000 });
    await sleep(100);
    // a waiter that died while waiting, listed before b
    await listWaiter(a.holdfast, 'gone', 'dead-owner', 1);
    const t0 = performance.now();
    await held.release();
    const next = await waiting;
    assert.ok(performance.now() - t0 < 1000, `b waited ${Math.round(performance.now() - t0)} ms after the release`);
    await next.release();
    assert.equal(await waiterCount(a.holdfast, 'gone'), 0, 'no waiter left listed');
    assert.equal((await a.holdfast.lock('gone').inspect()).owner, null, 'freed, not reserved');
  });

  test('a waiter that gives up leaves the list: no reservation is made for it', async () => {
    const prefix = `lw${Math.random().toString(36).slice(2, 7)}:`;
    const a = await ctx.open({ prefix });
    const b = await ctx.open({ prefix });
    const held = await a.holdfast.lock('giveup').acquire();
    assert.equal(await b.holdfast.lock('giveup').tryAcquire({ timeout: 150 }), null);
    assert.equal(await waiterCount(a.holdfast, 'giveup'), 0);
    await held.release();
    assert.equal((await a.holdfast.lock('giveup').inspect()).owner, null, 'freed, not reserved');
  });
});

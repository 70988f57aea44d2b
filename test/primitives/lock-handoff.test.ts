/**
 * The plain Lock's hand-off: a release wakes a waiter at once, and a releaser that asks again right away does not
 * barge past the waiters of its own process. Real redis-server, once per adapter.
 */
import assert from 'node:assert/strict';
import { it } from 'node:test';
import type { Holdfast } from '../../src/index.js';
import { describeEachAdapter, sleep } from '../support/suite.js';

describeEachAdapter('Lock hand-off', (ctx) => {
  async function client(): Promise<Holdfast> {
    return (await ctx.open()).holdfast;
  }

  void it('a releaser that re-acquires at once queues behind the waiter its release woke', async () => {
    const hf = await client();
    const lock = hf.lock('polite');
    const order: string[] = [];
    const held = await lock.acquire();
    const waiter = lock.withLock(async () => {
      order.push('waiter');
      await sleep(5);
    });
    await sleep(50); // the waiter has tried, subscribed and sleeps
    await held.release();
    await lock.withLock(async () => void order.push('releaser'));
    await waiter;
    assert.deepEqual(order, ['waiter', 'releaser']);
  });

  void it('eight contenders in one process take turns (every acquisition is a hand-off)', async () => {
    const hf = await client();
    const lock = hf.lock('turns');
    const holders: number[] = [];
    const stopAt = Date.now() + 400;
    await Promise.all(
      Array.from({ length: 8 }, async (_, i) => {
        while (Date.now() < stopAt) {
          await lock.withLock(async () => {
            holders.push(i);
            await sleep(1);
          });
        }
      }),
    );
    let changes = 0;
    for (let i = 1; i < holders.length; i++) if (holders[i] !== holders[i - 1]) changes++;
    assert.ok(holders.length > 16, `only ${holders.length} acquisitions`);
    assert.ok(changes >= (holders.length - 1) * 0.9, `${changes} hand-offs in ${holders.length} acquisitions`);
    assert.equal(new Set(holders).size, 8, 'every contender had the lock');
  });

  void it('a re-entry is never held back by waiters', async () => {
    const hf = await client();
    const lock = hf.lock('reentry');
    let waiting: Promise<unknown> | undefined;
    await lock.withLock(async () => {
      // another call chain (outside this scope's context) waits for the lock
      waiting = hf.core.context.exit(() => lock.acquire({ timeout: 5000 }));
      await sleep(50);
      const t = performance.now();
      const inner = await lock.acquire({ timeout: 1000 });
      assert.ok(performance.now() - t < 500);
      assert.equal(inner.holdCount, 2);
      await inner.release();
    });
    const other = (await waiting) as { holdCount: number; release(): Promise<void> };
    assert.equal(other.holdCount, 1);
    await other.release();
  });

  void it('a release wakes a waiter in another client at once, not at the lease end', async () => {
    const a = await client();
    const b = await ctx.open({ prefix: a.settings.prefix });
    const held = await a.lock('wake').acquire({ lease: 20_000 });
    const waiting = b.holdfast.lock('wake').acquire();
    await sleep(50);
    const t = performance.now();
    await held.release();
    const got = await waiting;
    assert.ok(performance.now() - t < 1000, 'woken by the release message');
    await got.release();
  });
});

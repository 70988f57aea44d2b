import assert from 'node:assert/strict';
import { it } from 'node:test';
import { AcquireTimeoutError, LockLostError, MultiLock } from '../../src/index.js';
import { describeEachAdapter, sleep } from '../support/suite.js';

describeEachAdapter('MultiLock', (ctx) => {
  void it('takes every lock in sorted order, with a token each, and releases them together', async () => {
    const multi = ctx.holdfast.multiLock(['m-c', 'm-a', 'm-b']);
    assert.deepEqual(multi.names, ['m-a', 'm-b', 'm-c']);
    const held = await multi.acquire({ timeout: 1000 });
    assert.deepEqual([...held.tokens.keys()], ['m-a', 'm-b', 'm-c']);
    for (const name of multi.names) {
      assert.equal(await ctx.holdfast.lock(name).isLocked(), true);
      assert.equal(await ctx.holdfast.lock(name).tryAcquire(), null);
    }
    await held.release();
    await held.release();
    for (const name of multi.names) assert.equal(await ctx.holdfast.lock(name).isLocked(), false);
    const again = await multi.withLock(({ tokens }) => tokens.get('m-a'));
    assert.ok((again ?? 0) > (held.tokens.get('m-a') ?? 0), 'tokens increase');
  });

  void it('is all-or-nothing: a busy lock makes the others roll back', async () => {
    const busy = await ctx.holdfast.lock('n-b').acquire();
    const multi = ctx.holdfast.multiLock(['n-a', 'n-b', 'n-c']);
    assert.equal(await multi.tryAcquire(), null);
    await assert.rejects(multi.acquire({ timeout: 200 }), (e: unknown) => e instanceof AcquireTimeoutError && e.lockName === 'n-a+n-b+n-c');
    assert.equal(await ctx.holdfast.lock('n-a').isLocked(), false, 'rolled back');
    assert.equal(await ctx.holdfast.lock('n-c').isLocked(), false, 'never taken');
    const ac = new AbortController();
    const waiting = multi.acquire({ signal: ac.signal });
    await sleep(50);
    ac.abort(new Error('stop'));
    await assert.rejects(waiting, /stop/);
    assert.equal(await ctx.holdfast.lock('n-a').isLocked(), false, 'rolled back after abort');
    // once free, a waiting multi-lock gets all of them
    const w = multi.acquire({ timeout: 3000 });
    await sleep(50);
    await busy.release();
    await (await w).release();
  });

  void it('two multi-locks over the same locks in opposite orders never deadlock', async () => {
    const names = ['d-1', 'd-2', 'd-3', 'd-4'];
    const one = ctx.holdfast.multiLock(names);
    const two = ctx.holdfast.multiLock([...names].reverse());
    let inside = 0;
    let maxInside = 0;
    const run = async (m: MultiLock): Promise<void> => {
      for (let i = 0; i < 15; i++) {
        await m.withLock(async () => {
          inside++;
          maxInside = Math.max(maxInside, inside);
          await sleep(1);
          inside--;
        }, { timeout: 5000 });
      }
    };
    await Promise.all([run(one), run(two), run(one)]);
    assert.equal(maxInside, 1);
  });

  void it('one signal aborts when any lock of the group is lost, and a fixed lease ends them together', async () => {
    const held = await ctx.holdfast.multiLock(['s-a', 's-b']).acquire({ lease: 400 });
    const ttls = await Promise.all(['s-a', 's-b'].map((n) => ctx.holdfast.lock(n).remainingTtl()));
    assert.ok(ttls.every((t) => t !== null && t > 300));
    await ctx.holdfast.lock('s-b').forceUnlock();
    const reason = await new Promise((resolve) => held.signal.addEventListener('abort', () => resolve(held.signal.reason)));
    assert.ok(reason instanceof LockLostError);
    assert.equal(held.lost, true);
    await held[Symbol.asyncDispose](); // never throws for lost locks
    assert.equal(await ctx.holdfast.lock('s-a').isLocked(), false);
  });

  void it('mixes Lock objects, including locks of another client', async () => {
    const { holdfast: other, dispose: d2 } = await ctx.open();
    try {
      const held = await ctx.holdfast.multiLock(['x-1', other.lock('x-2')]).acquire();
      assert.equal(await other.lock('x-2').isLocked(), true);
      await held.release();
      assert.equal(await other.lock('x-2').isLocked(), false);
    } finally {
      await d2();
    }
  });

  void it('rejects bad input before any Redis call', async () => {
    assert.throws(() => ctx.holdfast.multiLock([]), RangeError);
    assert.throws(() => ctx.holdfast.multiLock('a' as never), TypeError);
    assert.throws(() => ctx.holdfast.multiLock(['a', '']), RangeError);
    assert.throws(() => ctx.holdfast.multiLock(['a', 3 as never]), TypeError);
    assert.throws(() => ctx.holdfast.multiLock(['a', 'a']), RangeError);
    assert.throws(() => ctx.holdfast.multiLock(['a', ctx.holdfast.lock('a')]), RangeError);
    const multi = ctx.holdfast.multiLock(['a', 'b']);
    await assert.rejects(multi.acquire({ timeout: -1 }), RangeError);
    await assert.rejects(multi.acquire({ lease: 0 }), RangeError);
    await assert.rejects(multi.acquire({ wait: 1 } as never), TypeError);
    await assert.rejects(multi.withLock(1 as never), TypeError);
  });
});

import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { makeHoldfast, serverAdapter } from '../support/clients.js';
import { RedisServer } from '../support/redis-server.js';
import { describeEachAdapter, sleep } from '../support/suite.js';
import { startWorker } from './fixtures/spawn.js';

// The per-adapter suites have servers of their own; this one serves the describes outside them.
let server: RedisServer;
before(async () => {
  server = await RedisServer.start();
});
after(async () => {
  await server.stop();
});

describeEachAdapter('CountDownLatch', (ctx) => {
  void it('counts down to zero and wakes every waiter', async () => {
    const latch = ctx.holdfast.countDownLatch('latch-basic');
    assert.equal(await latch.getCount(), 0);
    assert.equal(await latch.await({ timeout: 0 }), true, 'a latch that does not exist is open');
    assert.equal(await latch.trySetCount(3), true);
    assert.equal(await latch.trySetCount(5), false);
    assert.equal(await latch.getCount(), 3);
    const waiters = [1, 2, 3].map(() => latch.await({ timeout: 3000 }));
    assert.equal(await latch.countDown(), 2);
    assert.equal(await latch.countDown(), 1);
    await sleep(50);
    const t0 = performance.now();
    assert.equal(await latch.countDown(), 0);
    assert.deepEqual(await Promise.all(waiters), [true, true, true]);
    assert.ok(performance.now() - t0 < 300, 'woken by pub/sub');
    assert.equal(await latch.countDown(), 0, 'counting down an open latch is harmless');
    assert.equal(await latch.trySetCount(1), true, 'reusable once open');
    assert.equal(await latch.delete(), true);
  });

  void it('await times out with false, and rejects with the signal reason', async () => {
    const latch = ctx.holdfast.countDownLatch('latch-wait');
    await latch.trySetCount(1);
    assert.equal(await latch.await({ timeout: 100 }), false);
    assert.equal(await latch.await({ timeout: 0 }), false);
    const ac = new AbortController();
    const w = latch.await({ signal: ac.signal });
    await sleep(30);
    ac.abort(new Error('stop'));
    await assert.rejects(w, /stop/);
    await latch.delete();
  });

  void it('a latch with a TTL opens when it expires', async () => {
    const latch = ctx.holdfast.countDownLatch('latch-ttl');
    await latch.trySetCount(2, { ttl: 200 });
    const t0 = performance.now();
    assert.equal(await latch.await({ timeout: 2000 }), true);
    assert.ok(performance.now() - t0 < 800);
  });

  void it('rejects bad input before any Redis call', async () => {
    assert.throws(() => ctx.holdfast.countDownLatch(null as never), TypeError);
    const latch = ctx.holdfast.countDownLatch('latch-bad');
    await assert.rejects(latch.trySetCount(0), RangeError);
    await assert.rejects(latch.trySetCount(-2), RangeError);
    await assert.rejects(latch.trySetCount('3' as never), TypeError);
    await assert.rejects(latch.trySetCount(2, { ttl: 0 }), RangeError);
    await assert.rejects(latch.trySetCount(2, { expire: 5 } as never), TypeError);
    await assert.rejects(latch.await({ timeout: 1.5 }), RangeError);
    await assert.rejects(latch.await({ signal: {} as never }), TypeError);
    await assert.rejects(latch.await('x' as never), TypeError);
  });
});

void describe('CountDownLatch across processes', () => {
  void it('a waiter in one process opens when two other processes count down', async () => {
    const { holdfast, dispose } = await makeHoldfast(serverAdapter, server.url);
    const prefix = holdfast.settings.prefix;
    const latch = holdfast.countDownLatch('latchp');
    await latch.trySetCount(2);
    // both children start at once (process start-up is the slow part); the counter counts down as soon as it runs
    const waiter = startWorker('latch-await', server.url, prefix, 'latchp', 20_000);
    const counter = startWorker('latch-count-down', server.url, prefix, 'latchp');
    const counters = [counter];
    try {
      await Promise.all([waiter.next('waiting'), counter.next('done')]);
      assert.equal(await latch.getCount(), 1);
      await sleep(100);
      assert.equal(await latch.countDown(), 0);
      const done = await waiter.next('done', 10_000);
      assert.equal(done.open, true);
    } finally {
      await waiter.kill();
      await Promise.all(counters.map((c) => c.kill()));
      await dispose();
    }
  });
});

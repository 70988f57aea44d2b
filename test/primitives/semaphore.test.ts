import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { AcquireTimeoutError } from '../../src/index.js';
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

describeEachAdapter('Semaphore', (ctx) => {
  void it('sets permits once, takes and gives them back', async () => {
    const sem = ctx.holdfast.semaphore('sem-basic');
    assert.equal(await sem.availablePermits(), 0);
    assert.equal(await sem.trySetPermits(3), true);
    assert.equal(await sem.trySetPermits(10), false, 'already set');
    const two = await sem.acquire(2);
    assert.equal(await sem.availablePermits(), 1);
    assert.equal(await sem.tryAcquire(2), null);
    const one = await sem.tryAcquire();
    assert.ok(one);
    assert.equal(await sem.availablePermits(), 0);
    await two.release();
    await two.release(); // idempotent
    await one[Symbol.asyncDispose]();
    assert.equal(await sem.availablePermits(), 3);
    assert.equal(await sem.addPermits(2), 5);
    assert.equal(await sem.addPermits(-1), 4);
    assert.equal(await sem.drainPermits(), 4);
    assert.equal(await sem.availablePermits(), 0);
    assert.equal(await sem.release(3), 3);
    assert.equal(await sem.withPermits(async () => sem.availablePermits(), 3), 0);
    assert.equal(await sem.availablePermits(), 3);
    assert.equal(await sem.delete(), true);
  });

  void it('wakes a waiter on release via pub/sub, and times out otherwise', async () => {
    const sem = ctx.holdfast.semaphore('sem-wait');
    await sem.trySetPermits(1);
    const held = await sem.acquire();
    await assert.rejects(sem.acquire(1, { timeout: 150 }), AcquireTimeoutError);
    const waiter = sem.acquire(1, { timeout: 3000 });
    await sleep(100);
    const t0 = performance.now();
    await held.release();
    const got = await waiter;
    assert.ok(performance.now() - t0 < 300, 'woken by the release');
    await got.release();
  });

  void it('a waiter for 1 permit is not left asleep when a waiter for more cannot be served', async () => {
    const sem = ctx.holdfast.semaphore('sem-mixed');
    await sem.trySetPermits(0);
    const big = sem.acquire(3, { timeout: 2000 });
    await sleep(30);
    const small = sem.acquire(1, { timeout: 2000 });
    await sleep(50);
    const t0 = performance.now();
    await sem.release(1);
    const s = await small;
    assert.ok(performance.now() - t0 < 300);
    await sem.release(3);
    await (await big).release();
    await s.release();
  });

  void it('aborts a wait with the signal reason', async () => {
    const sem = ctx.holdfast.semaphore('sem-abort');
    const ac = new AbortController();
    const waiting = sem.acquire(1, { signal: ac.signal });
    await sleep(50);
    ac.abort(new Error('stop'));
    await assert.rejects(waiting, /stop/);
  });

  void it('close() gives back permits still held', async () => {
    const { holdfast: h2, dispose: d2 } = await ctx.open({ prefix: ctx.holdfast.settings.prefix });
    const sem = h2.semaphore('sem-close');
    await sem.trySetPermits(2);
    const released = await sem.acquire(1);
    await released.release();
    await sem.acquire(2);
    await d2();
    assert.equal(await ctx.holdfast.semaphore('sem-close').availablePermits(), 2);
  });

  void it('rejects bad input before any Redis call', async () => {
    assert.throws(() => ctx.holdfast.semaphore(''), RangeError);
    const sem = ctx.holdfast.semaphore('sem-bad');
    await assert.rejects(sem.acquire(-1), RangeError); // 0 is a no-op (see semaphore-parity.test.ts)
    await assert.rejects(sem.acquire(1.5), RangeError);
    await assert.rejects(sem.acquire('2' as never), TypeError);
    await assert.rejects(sem.acquire(1, { timeout: -1 }), RangeError);
    await assert.rejects(sem.acquire(1, { lease: 5 } as never), TypeError);
    await assert.rejects(sem.tryAcquire(Number.NaN), RangeError);
    await assert.rejects(sem.release(-1), RangeError);
    await assert.rejects(sem.addPermits(0), RangeError);
    await assert.rejects(sem.trySetPermits(-1), RangeError);
    await assert.rejects(sem.trySetPermits(2 ** 60), RangeError);
    await assert.rejects(sem.withPermits(null as never), TypeError);
  });
});

void describe('Semaphore across processes', () => {
  void it('a semaphore of 3 never admits a 4th holder: 2 processes × 3 contenders', async () => {
    const { holdfast, dispose } = await makeHoldfast(serverAdapter, server.url);
    const prefix = holdfast.settings.prefix;
    try {
      const sem = holdfast.semaphore('semp');
      await sem.trySetPermits(3);
      const counter = `${prefix}active`;
      const workers = Array.from({ length: 2 }, () => startWorker('sem-loop', server.url, prefix, 'semp', 25, counter, 3));
      try {
        const done = await Promise.all(workers.map((w) => w.next('done', 30_000)));
        const maxSeen = Math.max(...done.map((d) => Number(d.maxSeen)));
        assert.ok(maxSeen <= 3, `saw ${maxSeen} holders at once`);
        assert.equal(maxSeen, 3, 'the test did reach full use');
        assert.equal(await sem.availablePermits(), 3, 'every permit came back');
      } finally {
        await Promise.all(workers.map((w) => w.kill()));
      }
    } finally {
      await dispose();
    }
  });
});

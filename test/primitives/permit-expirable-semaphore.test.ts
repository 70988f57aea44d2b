import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { AcquireTimeoutError, LockLostError, LockNotHeldError } from '../../src/index.js';
import { allAdapters, makeHoldfast } from '../support/clients.js';
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

describeEachAdapter('PermitExpirableSemaphore', (ctx) => {
  void it('hands out permits as leases with ids, releasable by id', async () => {
    const sem = ctx.holdfast.permitExpirableSemaphore('pse-basic');
    assert.equal(await sem.trySetPermits(3), true);
    assert.equal(await sem.trySetPermits(3), false);
    const a = await sem.acquire(2, { lease: 5000 });
    assert.match(a.id, /^[0-9a-f]{32}$/);
    assert.equal(a.permits, 2);
    assert.deepEqual(await sem.inspect(), { name: 'pse-basic', available: 1, acquired: 2, leases: 1 });
    assert.equal(await sem.tryAcquire(2), null);
    const left = await sem.remainingLease(a.id);
    assert.ok(left !== null && left > 4000 && left <= 5000);
    // release by id, from "another place"
    await sem.release(a.id);
    assert.equal(await sem.tryRelease(a.id), false);
    await assert.rejects(sem.release(a.id), LockNotHeldError);
    await assert.rejects(a.release(), LockNotHeldError, 'already released by id');
    assert.equal(await sem.availablePermits(), 3);
    assert.equal(await sem.addPermits(1), 4);
    assert.equal(await sem.withPermit(async (p) => (await sem.inspect()).acquired + p.permits, 4), 8);
    assert.equal(await sem.acquiredPermits(), 0);
  });

  void it('reclaims an expired lease, aborts its signal, and wakes a waiter', async () => {
    const sem = ctx.holdfast.permitExpirableSemaphore('pse-expire');
    await sem.trySetPermits(1);
    const p = await sem.acquire(1, { lease: 300 });
    const lost = new Promise((resolve) => p.signal.addEventListener('abort', () => resolve(p.signal.reason)));
    const t0 = performance.now();
    const next = await sem.acquire(1, { timeout: 3000, lease: 5000 });
    const waited = performance.now() - t0;
    assert.ok(waited > 200 && waited < 1000, `waited ${Math.round(waited)} ms for a 300 ms lease`);
    assert.ok((await lost) instanceof LockLostError);
    await assert.rejects(p.release(), LockNotHeldError);
    await p[Symbol.asyncDispose]();
    await next.release();
  });

  void it('renews: extend() by the holder or by id, and the watchdog without a lease', async () => {
    const sem = ctx.holdfast.permitExpirableSemaphore('pse-renew');
    await sem.trySetPermits(2);
    // leases long enough for a busy machine: each step below takes a few ms, at worst a few hundred
    const fixed = await sem.acquire(1, { lease: 2000 });
    await sleep(200);
    await fixed.extend(1500);
    assert.equal(await sem.extend(fixed.id, 5000), true);
    await sleep(300);
    assert.equal(fixed.lost, false);
    assert.equal((await sem.inspect()).leases, 1);
    const watched = await sem.acquire();
    await sleep(1300); // > watchdogLease 1000
    assert.equal(watched.lost, false);
    assert.equal((await sem.inspect()).leases, 2);
    await watched.release();
    // Extended by id elsewhere, but this holder's own view of its lease (1500 ms) runs out: its signal aborts, so
    // its release reports the loss — and still gives the permit back.
    if (!fixed.signal.aborted) await new Promise((resolve) => fixed.signal.addEventListener('abort', resolve));
    assert.equal(fixed.lost, true);
    await assert.rejects(fixed.release(), LockNotHeldError);
    assert.equal(await sem.extend(fixed.id, 1000), false);
    await assert.rejects(fixed.extend(1000), LockNotHeldError);
  });

  void it('times out and aborts a wait', async () => {
    const sem = ctx.holdfast.permitExpirableSemaphore('pse-wait');
    await assert.rejects(sem.acquire(1, { timeout: 100 }), AcquireTimeoutError);
    const ac = new AbortController();
    const w = sem.acquire(1, { signal: ac.signal });
    await sleep(30);
    ac.abort(new Error('stop'));
    await assert.rejects(w, /stop/);
  });

  void it('close() gives permits back', async () => {
    const { holdfast: h2, dispose: d2 } = await ctx.open({ prefix: ctx.holdfast.settings.prefix });
    const sem = h2.permitExpirableSemaphore('pse-close');
    await sem.trySetPermits(2);
    const p = await sem.acquire(2);
    await d2();
    assert.ok(p.lost);
    assert.equal(await ctx.holdfast.permitExpirableSemaphore('pse-close').availablePermits(), 2);
  });

  void it('rejects bad input before any Redis call', async () => {
    assert.throws(() => ctx.holdfast.permitExpirableSemaphore(''), RangeError);
    const sem = ctx.holdfast.permitExpirableSemaphore('pse-bad');
    await assert.rejects(sem.acquire(0), RangeError);
    await assert.rejects(sem.acquire(1, { lease: 0 }), RangeError);
    await assert.rejects(sem.acquire(1, { timeout: Number.POSITIVE_INFINITY }), RangeError);
    await assert.rejects(sem.acquire(1, { owner: 'x' } as never), TypeError);
    await assert.rejects(sem.release('nope'), RangeError);
    await assert.rejects(sem.release(5 as never), TypeError);
    await assert.rejects(sem.extend('0'.repeat(32), -1), RangeError);
    await assert.rejects(sem.remainingLease(''), RangeError);
    await assert.rejects(sem.addPermits(0), RangeError);
    await assert.rejects(sem.trySetPermits(1.5), RangeError);
    await assert.rejects(sem.withPermit(undefined as never), TypeError);
  });
}, { holdfast: { watchdogLease: 1000, watchdogInterval: 200 } });

void describe('PermitExpirableSemaphore across processes', () => {
  void it('permits of a kill -9ed process come back after their lease; 2 permits never admit a 3rd', async () => {
    const { holdfast, dispose } = await makeHoldfast(allAdapters[1]!, server.url);
    const prefix = holdfast.settings.prefix;
    const sem = holdfast.permitExpirableSemaphore('psep');
    await sem.trySetPermits(2);
    await holdfast.permitExpirableSemaphore('psep-loop').trySetPermits(2);
    // start every child at once: process start-up is the slow part on a busy machine
    const counter = `${prefix}active`;
    const holder = startWorker('psem-hold', server.url, prefix, 'psep', 1000, 2);
    const loopers = [1, 2].map(() => startWorker('psem-loop', server.url, prefix, 'psep-loop', 15, counter, 2));
    try {
      await holder.next('held');
      assert.equal(await sem.availablePermits(), 0);
      await holder.kill();
      const t0 = performance.now();
      const p = await sem.acquire(2, { timeout: 5000, lease: 2000 });
      const waited = performance.now() - t0;
      assert.ok(waited < 1400, `permits came back after ${Math.round(waited)} ms for a 1000 ms lease`);
      await p.release();
      const done = await Promise.all(loopers.map((w) => w.next('done', 30_000)));
      const maxSeen = Math.max(...done.map((d) => Number(d.maxSeen)));
      assert.ok(maxSeen <= 2, `saw ${maxSeen} holders at once`);
      assert.equal(maxSeen, 2, 'the test did reach full use');
      assert.equal(await holdfast.permitExpirableSemaphore('psep-loop').availablePermits(), 2);
    } finally {
      await holder.kill();
      await Promise.all(loopers.map((w) => w.kill()));
      await dispose();
    }
  });
});

/**
 * Adopting a lock by its owner id (`lock.adopt(ownerId)`): the same hold and token, no second hold count, renewal
 * taken over; across two OS processes (the holder is killed, the adopter keeps the lock and releases it).
 */
import assert from 'node:assert/strict';
import { fileURLToPath } from 'node:url';
import { test } from 'node:test';
import { LockNotHeldError } from '../../src/index.js';
import { spawnWorker, waitForLine } from '../support/process.js';
import { describeEachAdapter, sleep } from '../support/suite.js';

const worker = fileURLToPath(new URL('./fixtures/lock-worker.ts', import.meta.url));

describeEachAdapter('Lock.adopt', (ctx) => {
  test('across processes: same token, no second hold count; the watchdog is taken over after the holder dies', async (t) => {
    if (ctx.adapter.inProcess && !ctx.requireServer(t, 'another OS process works on the same data (a worker connects by URL): an in-process store is reachable only from its own process')) return;
    const prefix = `adopt${ctx.adapter.name}:`;
    const owner = `job-${Math.random().toString(36).slice(2)}`;
    // the worker's watchdog: 1000 ms lease, renewed every 300 ms
    const child = spawnWorker(worker, ['hold-as', ctx.adapter.name, ctx.urls[0]!, prefix, 'adopted', owner]);
    try {
      const token = Number((await waitForLine(child, /^held /)).split(' ')[1]);
      const { holdfast } = await ctx.open({ prefix, watchdogLease: 1000, watchdogInterval: 250 });
      const lock = holdfast.lock('adopted');
      const held = await lock.adopt(owner);
      assert.equal(held.token, token);
      assert.equal(held.owner, owner);
      assert.equal(held.holdCount, 1);
      assert.equal(held.refreshing, true);
      const info = await lock.inspect();
      assert.equal(info.owner, owner);
      assert.equal(info.holdCount, 1, 'adopting does not raise the hold count');
      child.kill('SIGKILL');
      await sleep(2000); // two of the dead holder's leases
      assert.equal(held.signal.aborted, false);
      assert.equal((await lock.inspect()).owner, owner, 'kept alive by the adopter');
      assert.equal(await lock.tryAcquire(), null);
      await held.release();
      assert.equal(await lock.isLocked(), false);
    } finally {
      child.kill('SIGKILL');
    }
  });

  test('a fixed lease is set at once; an owner that holds nothing is refused; bad input is a TypeError/RangeError', async () => {
    const { holdfast: other } = await ctx.open({ prefix: 'adopt-fixed:' });
    const first = await (await ctx.open({ prefix: 'adopt-fixed:' })).holdfast.lock('adopt-fixed').acquire({ owner: 'fixed-owner' });
    const lock = other.lock('adopt-fixed');
    const adopted = await lock.adopt('fixed-owner', { lease: 700 });
    assert.equal(adopted.refreshing, false);
    assert.equal(adopted.token, first.token);
    const ttl = (await lock.remainingTtl())!;
    assert.ok(ttl <= 700, `lease set to ${ttl}`);
    await assert.rejects(lock.adopt('someone-else'), LockNotHeldError);
    await assert.rejects(lock.adopt(''), RangeError);
    await assert.rejects(lock.adopt(42 as never), TypeError);
    await assert.rejects(lock.adopt('fixed-owner', { lease: -1 }), RangeError);
    await assert.rejects(lock.adopt('fixed-owner', { timeout: 1 } as never), TypeError);
    await adopted.release();
    assert.equal(await lock.isLocked(), false);
    await assert.rejects(first.release(), LockNotHeldError); // the one hold count was given up by the adopter
  });

  test('FairLock.adopt: same hold and token from another client; a waiter gets it once the adopter releases', async () => {
    const { holdfast: first } = await ctx.open({ prefix: 'adopt-fair:' });
    const { holdfast: second } = await ctx.open({ prefix: 'adopt-fair:', watchdogLease: 1000, watchdogInterval: 250 });
    const held = await first.fairLock('fair').acquire({ owner: 'fair-owner', lease: 1500 });
    const adopted = await second.fairLock('fair').adopt('fair-owner');
    assert.equal(adopted.token, held.token);
    assert.equal((await second.fairLock('fair').inspect()).holdCount, 1);
    const waiter = second.fairLock('fair').acquire({ timeout: 10_000 });
    await sleep(2000); // past the first holder's fixed lease: the adopter's watchdog keeps it
    assert.equal((await second.fairLock('fair').inspect()).owner, 'fair-owner');
    await adopted.release();
    const next = await waiter;
    assert.ok(next.token > held.token);
    await next.release();
    await assert.rejects(second.fairLock('fair').adopt('fair-owner'), LockNotHeldError);
  });
});

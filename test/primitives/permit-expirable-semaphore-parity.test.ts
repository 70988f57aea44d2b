/**
 * What Redisson's RPermitExpirableSemaphore users reach for: setPermits (the total), an expiry on the semaphore itself,
 * n permits as n ids (released one by one, as a list, or all-or-nothing), a permit without a lease that persists
 * after its holder died, and adopting a permit by id from another process.
 */
import assert from 'node:assert/strict';
import { it, type TestContext } from 'node:test';
import { LockNotHeldError, type LockLostError } from '../../src/index.js';
import { describeEachAdapter, sleep } from '../support/suite.js';
import { startWorker } from './fixtures/spawn.js';

describeEachAdapter('PermitExpirableSemaphore parity', (ctx) => {
  const keysOf = (name: string): string[] => {
    const k = ctx.holdfast.core.keys;
    return [k.permits(name), k.permitLeases(name), k.permitWeights(name)];
  };
  const command = (...args: string[]): Promise<unknown> => ctx.holdfast.core.command(args, args[1]);
  /**
   * Nothing of the semaphore is left: through the API (no TTL, nothing free or held, and `expire` finds no semaphore;
   * it would set one's TTL), and on Redis none of its three keys either. On PostgreSQL its leases are rows that go
   * with the semaphore's own (src/postgres/sql/psem.sql): there are no separate keys to expire.
   */
  /**
   * Another OS process works on the same data (a worker connects by URL: to Redis, or to PostgreSQL and the suite's
   * schema): an in-process store is reachable only from its own process.
   */
  const crossProcess = (t: TestContext): boolean => {
    if (!ctx.adapter.inProcess) return true;
    t.skip('not in one process: another OS process works on the same data (a worker connects by URL): an in-process store is reachable only from its own process');
    return false;
  };
  const assertGone = async (name: string, why: string): Promise<void> => {
    const sem = ctx.holdfast.permitExpirableSemaphore(name);
    assert.equal(await sem.remainingTtl(), null, why);
    assert.deepEqual(await sem.inspect(), { name, available: 0, acquired: 0, leases: 0 }, why);
    assert.equal(await sem.expire(60_000), false, why);
    if (!ctx.adapter.postgres) assert.equal(Number(await command('EXISTS', ...keysOf(name))), 0, why);
  };

  void it('setPermits sets the total: free = total − held, below zero while more are held', async () => {
    const sem = ctx.holdfast.permitExpirableSemaphore('pp-set');
    assert.equal(await sem.setPermits(2), 2, 'creates the semaphore');
    const a = await sem.acquire(2, { lease: 5000 });
    assert.equal(await sem.setPermits(5), 3);
    assert.equal(await sem.setPermits(1), -1);
    assert.equal(await sem.tryAcquire(1), null);
    await a.release();
    assert.deepEqual(await sem.inspect(), { name: 'pp-set', available: 1, acquired: 0, leases: 0 });
  });

  void it('an expiry on the semaphore itself: its keys go together, with the permits in them', async () => {
    const sem = ctx.holdfast.permitExpirableSemaphore('pp-ttl');
    assert.equal(await sem.expire(1000), false, 'nothing to expire yet');
    assert.equal(await sem.trySetPermits(2, { ttl: 700 }), true);
    const ttl = (await sem.remainingTtl())!;
    assert.ok(ttl > 0 && ttl <= 700);
    const permit = await sem.acquire(1, { lease: 5000 });
    if (!ctx.adapter.postgres) {
      for (const key of keysOf('pp-ttl')) assert.ok(Number(await command('PTTL', key)) > 0, `${key} shares the TTL`);
    }
    assert.ok((await sem.remainingTtl())! > 0, 'acquiring keeps the TTL');
    await sleep(900);
    await assertGone('pp-ttl', 'every key expired, with the permit in it');
    await assert.rejects(permit.release(), LockNotHeldError);
    await assertGone('pp-ttl', 'a late release creates nothing');
    await sem.trySetPermits(1);
    assert.equal(await sem.remainingTtl(), null);
    assert.equal(await sem.expire(60_000), true);
    assert.ok((await sem.remainingTtl())! > 50_000);
    assert.equal(await sem.persist(), true);
    assert.equal(await sem.remainingTtl(), null);
  });

  void it('acquireEach: n permits as n ids; release one, a list, or a batch all-or-nothing', async () => {
    const sem = ctx.holdfast.permitExpirableSemaphore('pp-each');
    await sem.trySetPermits(5);
    const lost: LockLostError[] = [];
    ctx.holdfast.on('lockLost', (e) => lost.push(e));
    const permits = await sem.acquireEach(4, { lease: 5000 });
    assert.equal(permits.length, 4);
    assert.equal(new Set(permits.map((p) => p.id)).size, 4);
    assert.ok(permits.every((p) => p.permits === 1));
    assert.equal(await sem.availablePermits(), 1);
    assert.equal(await sem.tryAcquireEach(2), null, 'all or none');
    assert.equal(await sem.availablePermits(), 1);
    const [a, b, c, d] = permits as [(typeof permits)[0], (typeof permits)[0], (typeof permits)[0], (typeof permits)[0]];
    await a.release();
    assert.equal(await sem.tryReleaseMany([b.id, a.id]), 1, 'only the held one');
    await assert.rejects(sem.releaseMany([c, d, a]), LockNotHeldError);
    assert.equal((await sem.inspect()).leases, 2, 'nothing released by a batch with one permit not held');
    await sem.releaseMany([c, d.id]);
    assert.equal(await sem.availablePermits(), 5);
    // released by id already: not held (as before), but neither lost nor renewed
    await assert.rejects(b.release(), LockNotHeldError);
    await d[Symbol.asyncDispose]();
    assert.deepEqual(lost, [], 'no permit was reported lost');
    assert.ok(!b.refreshing && !b.lost);
  });

  void it('a permit without a lease persists after its holder died; released by id from another process', async (t) => {
    if (!crossProcess(t)) return;
    const prefix = `pp${ctx.adapter.name}:`;
    const { holdfast } = await ctx.open({ prefix });
    const sem = holdfast.permitExpirableSemaphore('pp-persist');
    await sem.trySetPermits(1);
    const worker = startWorker('psem-hold-persist', ctx.urls[0]!, prefix, 'pp-persist', 1);
    try {
      const { id } = (await worker.next('held')) as { id: string };
      await worker.kill();
      await sleep(300);
      assert.equal(await sem.remainingLease(id), Infinity);
      assert.equal(await sem.availablePermits(), 0, 'kept after its holder died');
      const mine = await sem.tryAcquire(1, { timeout: 200 });
      assert.equal(mine, null);
      await sem.release(id);
      assert.equal(await sem.availablePermits(), 1);
      const local = await sem.acquire(1, { persist: true });
      assert.equal(local.refreshing, false);
      assert.equal(await sem.remainingLease(local.id), Infinity);
      await local.extend(5000); // a persisting permit can be given a lease
      assert.ok((await sem.remainingLease(local.id))! <= 5000);
      await local.release();
    } finally {
      await worker.kill();
    }
  });

  void it('adopt(permitId): take over a permit from another process; its watchdog keeps it after the holder died', async (t) => {
    if (!crossProcess(t)) return;
    const prefix = `ppa${ctx.adapter.name}:`;
    const { holdfast } = await ctx.open({ prefix, watchdogLease: 1000, watchdogInterval: 250 });
    const sem = holdfast.permitExpirableSemaphore('pp-adopt');
    await sem.trySetPermits(3);
    const worker = startWorker('psem-hold', ctx.urls[0]!, prefix, 'pp-adopt', 800, 2);
    try {
      const { id } = (await worker.next('held')) as { id: string };
      const adopted = await sem.adopt(id);
      assert.equal(adopted.id, id);
      assert.equal(adopted.permits, 2);
      await worker.kill();
      await sleep(1500);
      assert.equal(adopted.signal.aborted, false);
      assert.equal(await sem.availablePermits(), 1, 'still held, renewed here');
      await adopted.release();
      assert.equal(await sem.availablePermits(), 3);
      await assert.rejects(sem.adopt(id), LockNotHeldError);
    } finally {
      await worker.kill();
    }
  });

  void it('bad input is rejected before any Redis call', async () => {
    const sem = ctx.holdfast.permitExpirableSemaphore('pp-bad');
    await assert.rejects(sem.acquire(1, { persist: true, lease: 100 }), TypeError);
    await assert.rejects(sem.acquire(1, { persist: 'yes' as never }), TypeError);
    await assert.rejects(sem.acquire(0), RangeError);
    await assert.rejects(sem.acquireEach(0), RangeError);
    await assert.rejects(sem.acquireEach(1001), RangeError);
    await assert.rejects(sem.releaseMany([]), RangeError);
    await assert.rejects(sem.releaseMany('x' as never), TypeError);
    await assert.rejects(sem.releaseMany(['nope']), RangeError);
    const id = '0'.repeat(32);
    await assert.rejects(sem.releaseMany([id, id]), RangeError);
    await assert.rejects(sem.expire(0), RangeError);
    await assert.rejects(sem.setPermits(-1), RangeError);
    await assert.rejects(sem.trySetPermits(1, { ttl: 0 }), RangeError);
    await assert.rejects(sem.adopt('nope'), RangeError);
    await assertGone('pp-bad', 'nothing was written');
  });
});

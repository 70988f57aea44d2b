/**
 * What Redisson users reach for on a read-write lock: who holds the read side (fingerprints, never owner ids; hold
 * counts; remaining leases), "does this call chain / owner hold it", `forceUnlock`, and adopting a reader by owner id
 * (readers in another OS process).
 */
import assert from 'node:assert/strict';
import { it } from 'node:test';
import { LockLostError, LockNotHeldError, ownerFingerprint } from '../../src/index.js';
import { describeEachAdapter, sleep } from '../support/suite.js';
import { startWorker } from './fixtures/spawn.js';

describeEachAdapter('ReadWriteLock parity', (ctx) => {
  void it('readers(): each reader across processes by fingerprint, hold count and lease; never an owner id', { timeout: 90_000 }, async (t) => {
    if (ctx.adapter.inProcess && !ctx.requireServer(t, 'another OS process works on the same data (a worker connects by URL): an in-process store is reachable only from its own process')) return;
    const prefix = `rwp${ctx.adapter.name}:`;
    const owner = `remote-reader-${Math.random().toString(36).slice(2)}`;
    const remote = startWorker('rw-hold-read-as', ctx.urls[0]!, prefix, 'doc', owner, 2);
    try {
      await remote.next('held');
      const { holdfast } = await ctx.open({ prefix });
      const read = holdfast.readWriteLock('doc').readLock();
      const t0 = performance.now();
      const mine = await read.acquire({ lease: 5000 });
      const readers = await read.readers();
      const elapsed = performance.now() - t0; // the lease was set within it
      assert.equal(readers.length, 2);
      assert.ok(!JSON.stringify(readers).includes(owner) && !JSON.stringify(readers).includes(mine.owner), 'an owner id leaked');
      const theirs = readers.find((r) => r.fingerprint === ownerFingerprint(owner));
      const ours = readers.find((r) => r.fingerprint === mine.fingerprint);
      assert.ok(theirs && ours);
      assert.equal(theirs.holdCount, 2);
      assert.ok(theirs.remainingTtl > 20_000, 'the remote watchdog lease (30 s)');
      assert.equal(ours.holdCount, 1);
      assert.ok(ours.remainingTtl <= 5000 && ours.remainingTtl >= 5000 - elapsed - 5, `our lease: ${ours.remainingTtl} ms left after ${elapsed.toFixed(0)} ms`);
      assert.ok((await read.remainingTtl())! > 20_000, 'the longest reader lease');
      assert.equal(await read.holdCount({ owner }), 2);
      assert.equal(await read.isHeld({ owner }), true);
      assert.equal(await read.isHeld(), false, 'outside withLock this call chain holds nothing');

      // adopt the remote reader: same hold count, renewal here; the adopter releases it
      const adopted = await read.adopt(owner, { lease: 3000 });
      assert.equal(adopted.holdCount, 2);
      assert.equal(await read.holdCount({ owner }), 2, 'no second hold count');
      await remote.kill();
      await adopted.release();
      assert.equal(await read.holdCount({ owner }), 1);
      await mine.release();
    } finally {
      await remote.kill();
    }
  });

  void it('isHeld / holdCount follow the call chain inside withLock, on both sides', async () => {
    const rw = ctx.holdfast.readWriteLock('rwp-chain');
    await rw.readLock().withLock(async () => {
      assert.equal(await rw.readLock().isHeld(), true);
      assert.equal(await rw.readLock().holdCount(), 1);
      await rw.readLock().withLock(async () => assert.equal(await rw.readLock().holdCount(), 2));
      assert.equal(await rw.writeLock().isHeld(), false);
    });
    assert.equal(await rw.readLock().remainingTtl(), null);
    await rw.writeLock().withLock(async ({ lock }) => {
      assert.equal(await rw.writeLock().isHeld(), true);
      assert.equal(await rw.writeLock().holdCount({ owner: lock.owner }), 1);
      assert.ok((await rw.writeLock().remainingTtl())! > 0);
      assert.equal(await rw.readLock().isHeld(), false);
    });
    assert.equal(await rw.writeLock().isHeld(), false);
    assert.equal(await rw.writeLock().remainingTtl(), null);
    await assert.rejects(rw.readLock().holdCount({ owner: '' }), RangeError);
    await assert.rejects(rw.readLock().isHeld({ id: 'x' } as never), TypeError);
    await assert.rejects(rw.writeLock().adopt('nobody'), LockNotHeldError);
  });

  void it('forceUnlock: readers in another process and a writer are deleted, waiters are woken, holders lose at renewal', { timeout: 90_000 }, async (t) => {
    if (ctx.adapter.inProcess && !ctx.requireServer(t, 'another OS process works on the same data (a worker connects by URL): an in-process store is reachable only from its own process')) return;
    const prefix = `rwf${ctx.adapter.name}:`;
    const remote = startWorker('rw-hold-read', ctx.urls[0]!, prefix, 'rwf', 60_000);
    try {
      await remote.next('held');
      const { holdfast } = await ctx.open({ prefix, watchdogLease: 1000, watchdogInterval: 200 });
      const rw = holdfast.readWriteLock('rwf');
      const local = await rw.readLock().acquire();
      assert.equal((await rw.readLock().readers()).length, 2);
      const writer = rw.writeLock().acquire({ timeout: 10_000 });
      await sleep(100);
      const t0 = performance.now();
      assert.equal(await rw.forceUnlock(), true);
      const w = await writer;
      // woken by the force-unlock's message: without it, the writer would sleep the readers' remaining lease (the
      // remote one's is 30 s), so 5 s is proof enough and room for a busy machine
      assert.ok(performance.now() - t0 < 5000, 'the waiting writer was woken');
      // the local reader loses at its next renewal (every 200 ms): maybe already, before the listener is added (an
      // 'abort' listener added to an aborted signal never fires; this wait hung the file on a busy machine)
      if (!local.signal.aborted) await new Promise((r) => local.signal.addEventListener('abort', r, { once: true }));
      assert.ok(local.signal.reason instanceof LockLostError);
      assert.equal(await rw.forceUnlock(), true, 'the writer is deleted too');
      assert.equal(await rw.forceUnlock(), false, 'nothing left');
      assert.equal(w.token > 0, true);
      await assert.rejects(w.release(), LockNotHeldError);
    } finally {
      await remote.kill();
    }
  });
});

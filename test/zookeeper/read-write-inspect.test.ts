/**
 * Read-side inspection and forced unlock of the ZooKeeper read-write lock, against a real ZooKeeper and a second OS
 * process: `readers()` (fingerprints, hold counts where known, sessions), `isHeld`/`holdCount`, `forceUnlock()` on
 * the read-write lock and the lock (holders' signals abort, waiters keep their places), and a downgraded reader that
 * keeps a writer that was already waiting out.
 */
import assert from 'node:assert/strict';
import { it } from 'node:test';
import { LockLostError, LockNotHeldError, ownerFingerprint, type ZooKeeperHoldfast } from '../../src/zookeeper/index.js';
import { ZkCluster, zkDescribe } from '../support/zookeeper.js';
import { sleep, startWorker, twoClients, uniq } from './helpers.js';

/** Resolves once `held.signal` aborts (the holder's watch on its node fired), failing after 10 s. */
async function lostSoon(held: { signal: AbortSignal }): Promise<void> {
  if (held.signal.aborted) return;
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error('the holder was not told its node was deleted')), 10_000);
    held.signal.addEventListener('abort', () => (clearTimeout(timer), resolve()), { once: true });
  });
}

zkDescribe('ZooKeeper ReadWriteLock inspection and forceUnlock', () => {
  let zk: ZkCluster;
  let a: ZooKeeperHoldfast;
  let b: ZooKeeperHoldfast;

  twoClients((...started) => ([zk, a, b] = started));

  void it('readers(): every reader by fingerprint, with its hold count here and its session; never an owner id', async () => {
    const name = uniq('readers');
    const worker = startWorker(['rw-hold', zk.connectionString, name, 'read', 'remote-reader']);
    try {
      await worker.waitFor((l) => l.event === 'held');
      const rw = a.readWriteLock(name);
      const mine = await rw.readLock().acquire({ owner: 'local-reader' });
      const again = await rw.readLock().acquire({ owner: 'local-reader' });
      const readers = await b.readWriteLock(name).readLock().readers();
      assert.equal(readers.length, 2);
      const [remote, local] = readers; // queue order: the worker's node came first
      assert.equal(remote!.fingerprint, ownerFingerprint('remote-reader'));
      assert.equal(remote!.holdCount, null, 'another process keeps its own count');
      assert.equal(local!.fingerprint, ownerFingerprint('local-reader'));
      assert.notEqual(remote!.session, local!.session);
      assert.match(local!.session, /^[0-9a-f]{16}$/);
      assert.ok(!JSON.stringify(readers).includes('reader"'), 'no owner id in the answer');
      // in the client that holds it, the count is known
      const here = await rw.readLock().readers();
      assert.equal(here.find((r) => r.fingerprint === ownerFingerprint('local-reader'))?.holdCount, 2);
      assert.equal(await rw.readLock().holdCount({ owner: 'local-reader' }), 2);
      assert.equal(await rw.readLock().isHeld({ owner: 'local-reader' }), true);
      assert.equal(await rw.readLock().isHeld({ owner: 'remote-reader' }), false, 'held in another session');
      assert.equal(await rw.writeLock().isHeld({ owner: 'local-reader' }), false);
      assert.equal(await rw.readLock().isHeld(), false, 'outside withLock: no owner');
      await rw.readLock().withLock(async () => {
        assert.equal(await rw.readLock().isHeld(), true);
        assert.equal(await rw.readLock().holdCount(), 1);
      });
      await again.release();
      await mine.release();
      assert.equal(await rw.readLock().holdCount({ owner: 'local-reader' }), 0);
      assert.equal((await rw.readLock().readers()).length, 1);
      // a writer waiting behind the reader is not a reader
      const writer = b.readWriteLock(name).writeLock().acquire({ timeout: 20_000 });
      while ((await rw.queue()).length < 2) await sleep(10);
      assert.deepEqual((await rw.readLock().readers()).map((r) => r.fingerprint), [ownerFingerprint('remote-reader')]);
      worker.child.kill('SIGKILL');
      const w = await writer; // the worker's session ends
      assert.deepEqual(await rw.readLock().readers(), []);
      assert.equal(await b.readWriteLock(name).writeLock().isHeld({ owner: w.owner }), true);
      await w.release();
    } finally {
      worker.child.kill('SIGKILL');
    }
  });

  void it('bad arguments are refused at once', async () => {
    const side = a.readWriteLock(uniq('args')).readLock();
    await assert.rejects(side.holdCount({ owner: '' }), RangeError);
    await assert.rejects(side.isHeld({ owner: 5 } as never), TypeError);
    await assert.rejects(side.holdCount({ bogus: 1 } as never), TypeError);
  });

  void it('forceUnlock(): deletes the writer in another process (its signal aborts), a waiter takes over', async () => {
    const name = uniq('force-w');
    const worker = startWorker(['rw-hold', zk.connectionString, name, 'write', 'remote-writer']);
    try {
      await worker.waitFor((l) => l.event === 'held');
      const rw = a.readWriteLock(name);
      const reader = rw.readLock().acquire({ timeout: 20_000 });
      while ((await rw.queue()).length < 2) await sleep(10);
      assert.equal(await b.readWriteLock(name).forceUnlock(), true);
      const lost = await worker.waitFor((l) => l.event === 'lost');
      assert.equal(lost.reason, 'taken-over');
      const r = await reader; // the waiter kept its node and its place
      assert.deepEqual((await rw.queue()).map((q) => q.kind), ['read']);
      assert.equal(await b.readWriteLock(name).forceUnlock(), true);
      await lostSoon(r);
      assert.ok(r.signal.reason instanceof LockLostError);
      await assert.rejects(r.release(), LockNotHeldError);
      assert.deepEqual(await rw.queue(), []);
      assert.equal(await rw.forceUnlock(), false, 'nothing left to delete');
    } finally {
      worker.child.kill('SIGKILL');
    }
  });

  void it('forceUnlock(): deletes every reader, downgraded ones included; a waiting writer gets the lock', async () => {
    const name = uniq('force-r');
    const rw = a.readWriteLock(name);
    const w = await rw.writeLock().acquire({ owner: 'job' });
    const down = await rw.readLock().acquire({ owner: 'job' });
    await w.release(); // downgraded: 'job' reads
    const other = await b.readWriteLock(name).readLock().acquire({ timeout: 5000 });
    const writer = b.readWriteLock(name).writeLock().acquire({ timeout: 20_000 });
    while ((await rw.queue()).length < 3) await sleep(10);
    assert.deepEqual((await rw.readLock().readers()).map((r) => r.fingerprint).sort(), [ownerFingerprint('job'), ownerFingerprint(other.owner)].sort());
    assert.equal(await rw.forceUnlock(), true);
    const next = await writer;
    await lostSoon(down);
    await lostSoon(other);
    assert.ok(next.token > other.token);
    await next.release();
  });

  void it('a writer waiting when the write lock is downgraded waits for the downgraded reader too', async () => {
    const name = uniq('downgrade');
    const rw = a.readWriteLock(name);
    const w = await rw.writeLock().acquire({ owner: 'job' });
    let granted = false;
    const writer = b
      .readWriteLock(name)
      .writeLock()
      .acquire({ timeout: 20_000 })
      .then((held) => {
        granted = true;
        return held;
      });
    while ((await rw.queue()).length < 2) await sleep(10);
    const read = await rw.readLock().acquire({ owner: 'job', timeout: 1000 });
    await w.release();
    await sleep(300);
    assert.equal(granted, false, 'the writer was granted beside the downgraded reader');
    assert.equal(await rw.readLock().isHeld({ owner: 'job' }), true);
    await read.release();
    const next = await writer;
    await next.release();
    assert.deepEqual(await rw.queue(), []);
  });

  void it('ZkLock.forceUnlock(): the holder in this client loses it at once, the first waiter gets it', async () => {
    const name = uniq('force-lock');
    const held = await a.lock(name).acquire();
    const waiting = b.lock(name).acquire({ timeout: 20_000 });
    while ((await a.lock(name).queue()).length < 2) await sleep(10);
    assert.equal(await b.lock(name).forceUnlock(), true);
    const next = await waiting;
    await lostSoon(held);
    assert.equal((held.signal.reason as LockLostError).reason, 'taken-over');
    assert.ok(next.token > held.token);
    await next.release();
    assert.equal(await a.lock(name).forceUnlock(), false);
  });
});

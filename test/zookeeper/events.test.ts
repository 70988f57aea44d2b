/**
 * `waitUntilFree` and `onRelease` on the ZooKeeper lock and read-write lock, against a real ZooKeeper and a second OS
 * process: woken by a watch on the queue when a hold of another process ends (released, or its session gone after a
 * kill -9), a hand-off heard as a release, waiting that never creates a node, and the read side's meaning.
 */
import assert from 'node:assert/strict';
import { it } from 'node:test';
import type { ReleaseEvent, ZooKeeperHoldfast } from '../../src/zookeeper/index.js';
import { ZkCluster, zkDescribe } from '../support/zookeeper.js';
import { sleep, startWorker, twoClients, uniq } from './helpers.js';

/** Waits until `events` has `n` entries (they arrive asynchronously), failing after 10 s; then a moment for extras. */
async function heardAll(events: unknown[], n: number): Promise<void> {
  const until = performance.now() + 10_000;
  while (events.length < n && performance.now() < until) await sleep(20);
  await sleep(100);
}

zkDescribe('ZooKeeper lock events', () => {
  let zk: ZkCluster;
  let a: ZooKeeperHoldfast;
  let b: ZooKeeperHoldfast;

  twoClients((...started) => ([zk, a, b] = started));

  void it('ZkLock.waitUntilFree: at once when free, false at the timeout, never queues; the signal aborts it', async () => {
    const name = uniq('wuf');
    const lock = a.lock(name);
    assert.equal(await lock.waitUntilFree(), true);
    const held = await b.lock(name).acquire();
    assert.equal(await lock.waitUntilFree({ timeout: 150 }), false);
    assert.equal(await lock.waitUntilFree({ timeout: 0 }), false);
    const controller = new AbortController();
    const waiting = lock.waitUntilFree({ signal: controller.signal });
    controller.abort(new Error('stop'));
    await assert.rejects(waiting, /stop/);
    assert.deepEqual(await lock.queue(), [held.path.split('/').pop()], 'waiting creates no node');
    await held.release();
    await assert.rejects(lock.waitUntilFree({ timeout: -1 }), RangeError);
    await assert.rejects(lock.onRelease(1 as never), TypeError);
  });

  void it('across processes: woken by the release of another process; onRelease hears it; a hand-off is a release', async () => {
    const name = uniq('wuf-proc');
    const heard: ReleaseEvent[] = [];
    const unsubscribe = await a.onRelease(name, (e) => heard.push(e));
    const worker = startWorker(['rw-hold', zk.connectionString, name, 'lock', 'remote', '400']);
    try {
      await worker.waitFor((l) => l.event === 'held');
      assert.equal(await a.lock(name).isLocked(), true);
      assert.equal(await a.lock(name).waitUntilFree({ timeout: 20_000 }), true);
      await worker.waitFor((l) => l.event === 'released');
      await heardAll(heard, 1);
      assert.deepEqual(heard, [{ name, kind: 'release' }]);
      // a release that hands the lock to a queued waiter: never free, but the release ends the wait
      const first = await b.lock(name).acquire();
      const next = a.lock(name).acquire({ timeout: 20_000 });
      while ((await a.lock(name).queue()).length < 2) await sleep(10);
      const watcher = a.lock(name).waitUntilFree({ timeout: 20_000 });
      await sleep(100);
      await first.release();
      assert.equal(await watcher, true);
      const second = await next;
      assert.equal(await b.lock(name).forceUnlock(), true);
      await heardAll(heard, 3);
      assert.deepEqual(heard.slice(1), [
        { name, kind: 'release' },
        { name, kind: 'release' },
      ], 'the hand-off and the forced unlock, each a release');
      while (!second.lost) await sleep(20); // the holder's watch on its node fires (the test's timeout bounds it)
      unsubscribe();
      unsubscribe(); // idempotent
      await (await b.lock(name).acquire()).release();
      await sleep(200);
      assert.equal(heard.length, 3, 'nothing after unsubscribing');
    } finally {
      worker.child.kill('SIGKILL');
    }
  });

  void it('a holder killed with -9: the wait ends when its session does, and the end is reported', async () => {
    const name = uniq('wuf-kill');
    const heard: ReleaseEvent[] = [];
    const unsubscribe = await b.lock(name).onRelease((e) => heard.push(e));
    const worker = startWorker(['rw-hold', zk.connectionString, name, 'lock', 'remote']);
    try {
      await worker.waitFor((l) => l.event === 'held');
      worker.child.kill('SIGKILL');
      assert.equal(await a.lock(name).waitUntilFree({ timeout: 30_000 }), true);
      await heardAll(heard, 1);
      assert.deepEqual(heard, [{ name, kind: 'release' }]);
      unsubscribe();
    } finally {
      worker.child.kill('SIGKILL');
    }
  });

  void it('read-write lock: free = neither a writer nor readers; readers that overlap keep it busy; sides reported', async () => {
    const name = uniq('rw-ev');
    const rw = a.readWriteLock(name);
    const heard: ReleaseEvent[] = [];
    const unsubscribe = await rw.onRelease((e) => heard.push(e));
    const worker = startWorker(['rw-hold', zk.connectionString, name, 'read', 'remote-reader', '600']);
    try {
      await worker.waitFor((l) => l.event === 'held');
      assert.equal(await rw.readLock().waitUntilFree({ timeout: 0 }), true, 'a reader would be let in beside a reader');
      assert.equal(await rw.writeLock().waitUntilFree({ timeout: 100 }), false);
      // a second reader joins before the first leaves: the lock never becomes free while it reads
      const overlap = await b.readWriteLock(name).readLock().acquire();
      await worker.waitFor((l) => l.event === 'released');
      assert.equal(await rw.waitUntilFree({ timeout: 300 }), false, 'the second reader still reads');
      const watcher = rw.waitUntilFree({ timeout: 20_000 });
      await sleep(100);
      await overlap.release();
      assert.equal(await watcher, true);
      await heardAll(heard, 2);
      assert.deepEqual(heard, [
        { name, kind: 'release', side: 'read' },
        { name, kind: 'release', side: 'read' },
      ]);
      unsubscribe();
    } finally {
      worker.child.kill('SIGKILL');
    }
  });

  void it('read side: waits while a writer holds or waits; woken when the last writer is gone', async () => {
    const name = uniq('rw-read');
    const rw = a.readWriteLock(name);
    const heard: ReleaseEvent[] = [];
    const unsubscribe = await rw.onRelease((e) => heard.push(e));
    const reader = await b.readWriteLock(name).readLock().acquire();
    const writer = b.readWriteLock(name).writeLock().acquire({ timeout: 20_000 });
    while ((await rw.queue()).length < 2) await sleep(10);
    assert.equal(await rw.readLock().waitUntilFree({ timeout: 200 }), false, 'a waiting writer keeps new readers out');
    const watcher = rw.readLock().waitUntilFree({ timeout: 20_000 });
    await reader.release();
    const w = await writer;
    await sleep(100);
    await w.release();
    assert.equal(await watcher, true);
    await heardAll(heard, 2);
    assert.deepEqual(heard, [
      { name, kind: 'release', side: 'read' },
      { name, kind: 'release', side: 'write' },
    ]);
    unsubscribe();
  });
});

/** The read-write lock on the ZooKeeper backend, against a real ZooKeeper. */
import assert from 'node:assert/strict';
import { it } from 'node:test';
import { UpgradeRefusedError, type ZooKeeperHoldfast } from '../../src/zookeeper/index.js';
import { zkDescribe } from '../support/zookeeper.js';
import { sleep, twoClients, uniq } from './helpers.js';

zkDescribe('ZooKeeper ReadWriteLock', () => {
  let a: ZooKeeperHoldfast;
  let b: ZooKeeperHoldfast;

  twoClients((_zk, first, second) => ([a, b] = [first, second]));

  void it('many readers at once; a writer waits for them and excludes everyone', async () => {
    const name = uniq('rw');
    const r1 = await a.readWriteLock(name).readLock().acquire();
    const r2 = await b.readWriteLock(name).readLock().acquire({ timeout: 1000 });
    assert.equal(await b.readWriteLock(name).writeLock().tryAcquire(), null);
    const writer = b.readWriteLock(name).writeLock().acquire({ timeout: 20_000 });
    while ((await a.readWriteLock(name).queue()).length < 3) await sleep(10);
    await r1.release();
    await sleep(100);
    await r2.release();
    const w = await writer;
    assert.ok(w.token > r2.token);
    assert.equal(await a.readWriteLock(name).readLock().tryAcquire(), null);
    assert.equal(await a.readWriteLock(name).writeLock().tryAcquire(), null);
    await w.release();
    const r3 = await a.readWriteLock(name).readLock().tryAcquire();
    assert.ok(r3);
    await r3.release();
  });

  void it('a waiting writer is not starved by readers that come after it', async () => {
    const name = uniq('starve');
    const r1 = await a.readWriteLock(name).readLock().acquire();
    const writer = b.readWriteLock(name).writeLock().acquire({ timeout: 20_000 });
    while ((await a.readWriteLock(name).queue()).length < 2) await sleep(10);
    assert.equal(await a.readWriteLock(name).readLock().tryAcquire(), null, 'a later reader queues behind the writer');
    const order: string[] = [];
    const lateReader = a
      .readWriteLock(name)
      .readLock()
      .acquire({ timeout: 20_000 })
      .then(async (r) => {
        order.push('reader');
        await r.release();
      });
    while ((await a.readWriteLock(name).queue()).length < 3) await sleep(10);
    await r1.release();
    const w = await writer;
    order.push('writer');
    await sleep(50);
    await w.release();
    await lateReader;
    assert.deepEqual(order, ['writer', 'reader']);
  });

  void it('the writer may downgrade to a read lock; a reader may not upgrade', async () => {
    const name = uniq('grade');
    const rw = a.readWriteLock(name);
    await rw.writeLock().withLock(async () => {
      const read = await rw.readLock().acquire({ timeout: 100 });
      const again = await rw.writeLock().acquire({ timeout: 100 });
      await again.release();
      assert.equal(await b.readWriteLock(name).readLock().tryAcquire(), null, 'the write lock still excludes readers');
      // keep the read lock past the write lock's release: the downgrade
      setImmediate(() => void read.release());
    });
    await sleep(50);
    await rw.readLock().withLock(async () => {
      await assert.rejects(rw.writeLock().acquire({ timeout: 100 }), UpgradeRefusedError);
      const inner = await rw.readLock().acquire();
      await inner.release();
    });
    assert.deepEqual(await rw.queue(), []);
  });

  void it('a downgraded read lock keeps writers out after the write lock is released', async () => {
    const name = uniq('down');
    const rw = a.readWriteLock(name);
    const w = await rw.writeLock().acquire({ owner: 'job' });
    const r = await rw.readLock().acquire({ owner: 'job', timeout: 100 });
    await w.release();
    assert.equal(await b.readWriteLock(name).writeLock().tryAcquire(), null);
    const otherReader = await b.readWriteLock(name).readLock().tryAcquire();
    assert.ok(otherReader, 'other readers may join the downgraded reader');
    await otherReader.release();
    await r.release();
    const w2 = await b.readWriteLock(name).writeLock().tryAcquire();
    assert.ok(w2);
    await w2.release();
  });
});

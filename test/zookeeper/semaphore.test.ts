/** The counting semaphore on the ZooKeeper backend, against a real ZooKeeper. */
import assert from 'node:assert/strict';
import { it } from 'node:test';
import { AcquireTimeoutError, type ZooKeeperHoldfast } from '../../src/zookeeper/index.js';
import { ZkCluster, zkDescribe } from '../support/zookeeper.js';
import { sleep, startWorker, twoClients, uniq } from './helpers.js';

zkDescribe('ZooKeeper Semaphore', () => {
  let zk: ZkCluster;
  let a: ZooKeeperHoldfast;
  let b: ZooKeeperHoldfast;

  twoClients((...started) => ([zk, a, b] = started));

  void it('grants at most N permits at once; a release lets a waiter in', async () => {
    const name = uniq('sem');
    const s = a.semaphore(name, 3);
    const permits = [await s.acquire(), await s.acquire(), await b.semaphore(name, 3).acquire()];
    assert.equal(await s.availablePermits(), 0);
    assert.equal(await s.tryAcquire(), null);
    await assert.rejects(s.acquire({ timeout: 150 }), AcquireTimeoutError);
    const waiter = b.semaphore(name, 3).acquire({ timeout: 20_000 });
    while ((await s.queue()).length < 4) await sleep(10);
    await permits[1]!.release(); // not the first: the waiter must notice any release, not only its predecessor's
    const got = await waiter;
    assert.equal(await s.availablePermits(), 0);
    for (const p of [permits[0]!, permits[2]!, got]) await p.release();
    assert.equal(await s.availablePermits(), 3);
  });

  void it('concurrent users never exceed the permits', async () => {
    const name = uniq('conc');
    let inside = 0;
    let most = 0;
    await Promise.all(
      Array.from({ length: 8 }, (_, i) =>
        (i % 2 ? a : b).semaphore(name, 2).withPermit(async () => {
          inside++;
          most = Math.max(most, inside);
          await sleep(20);
          inside--;
        }),
      ),
    );
    assert.equal(most, 2);
  });

  void it("a crashed holder's permit comes back after its session timeout", async () => {
    const name = uniq('semcrash');
    const s = a.semaphore(name, 1);
    const worker = startWorker(['crash-permit', zk.connectionString, name, '1500']);
    try {
      await worker.waitFor((l) => l.event === 'held');
      assert.equal(await s.tryAcquire(), null);
      worker.child.kill('SIGKILL');
      await worker.exited;
      const start = performance.now();
      const p = await s.acquire({ timeout: 10_000 });
      assert.ok(performance.now() - start < 1500 + 5000);
      await p.release();
    } finally {
      worker.child.kill('SIGKILL');
    }
  });
});

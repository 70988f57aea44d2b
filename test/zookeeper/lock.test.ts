/**
 * The shared lock behaviour on the ZooKeeper backend, against a real standalone ZooKeeper: mutual exclusion across
 * processes, reentrancy, a crashed holder freed after the session timeout, aborted and timed-out waits leaving no
 * node, a lost `create` reply recovered without an orphan, and the argument checks.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { it } from 'node:test';
import { AcquireTimeoutError, LockLostError, LockNotHeldError, type ZooKeeperHoldfast } from '../../src/zookeeper/index.js';
import { TcpProxy } from '../support/tcp-proxy.js';
import { ZkCluster, zkDescribe } from '../support/zookeeper.js';
import { makeZk, sleep, startWorker, twoClients, uniq } from './helpers.js';

zkDescribe('ZooKeeper Lock', () => {
  let zk: ZkCluster;
  let a: ZooKeeperHoldfast;
  let b: ZooKeeperHoldfast;

  twoClients((...started) => ([zk, a, b] = started));

  void it('excludes other owners and hands over on release, with a larger czxid token', async () => {
    const name = uniq('excl');
    const held = await a.lock(name).acquire();
    assert.equal(held.state, 'held');
    assert.equal(await b.lock(name).tryAcquire(), null);
    assert.equal(await a.lock(name).tryAcquire(), null, 'another call chain of the same process is another owner');
    const waiting = b.lock(name).acquire({ timeout: 5000 });
    await sleep(100);
    await held.release();
    const next = await waiting;
    assert.ok(next.token > held.token, `${next.token} > ${held.token}`);
    assert.equal(held.state, 'released');
    await next.release();
    assert.equal(await a.lock(name).isLocked(), false);
  });

  void it('is reentrant inside withLock (same node, same token) and with an explicit owner', async () => {
    const name = uniq('reent');
    await a.lock(name).withLock(async ({ token }) => {
      const inner = await a.lock(name).acquire();
      assert.equal(inner.token, token);
      await a.lock(name).withLock(async (scope) => assert.equal(scope.token, token));
      await inner.release();
      assert.equal((await a.lock(name).queue()).length, 1);
      assert.equal(await b.lock(name).tryAcquire(), null, 'still held after the inner releases');
    });
    assert.equal(await a.lock(name).isLocked(), false);
    const one = await a.lock(name).acquire({ owner: 'job-7' });
    const two = await a.lock(name).acquire({ owner: 'job-7', timeout: 100 });
    assert.equal(one.token, two.token);
    await one.release();
    await two.release();
    assert.equal(await a.lock(name).isLocked(), false);
  });

  void it('a release is idempotent and await using releases', async () => {
    const name = uniq('dispose');
    {
      await using held = await a.lock(name).acquire();
      assert.ok(held.token > 0);
      const p = held.release();
      assert.equal(held.release(), p);
      await p;
    }
    {
      await using _held = await a.lock(name).acquire();
      assert.equal(await a.lock(name).isLocked(), true);
    }
    assert.equal(await a.lock(name).isLocked(), false);
  });

  void it('a timed-out or aborted wait leaves no node behind', async () => {
    const name = uniq('abort');
    const held = await a.lock(name).acquire();
    await assert.rejects(b.lock(name).acquire({ timeout: 200 }), AcquireTimeoutError);
    const controller = new AbortController();
    const waiting = b.lock(name).acquire({ signal: controller.signal });
    while ((await a.lock(name).queue()).length < 2) await sleep(10);
    controller.abort(new Error('stop waiting'));
    await assert.rejects(waiting, /stop waiting/);
    assert.equal((await a.lock(name).queue()).length, 1);
    await assert.rejects(b.lock(name).acquire({ signal: AbortSignal.abort(new Error('already')) }), /already/);
    await held.release();
    assert.equal(await a.lock(name).isLocked(), false);
  });

  void it('waiters are served in FIFO order, each watching its predecessor', async () => {
    const name = uniq('fifo');
    const held = await a.lock(name).acquire();
    const order: number[] = [];
    const waits: Promise<void>[] = [];
    for (const i of [0, 1, 2, 3]) {
      waits.push(
        (i % 2 ? b : a)
          .lock(name)
          .acquire({ timeout: 20_000 })
          .then(async (h) => {
            order.push(i);
            await sleep(5);
            await h.release();
          }),
      );
      // the next waiter joins only once this one is in the queue
      while ((await a.lock(name).queue()).length < i + 2) await sleep(10);
    }
    await held.release();
    await Promise.all(waits);
    assert.deepEqual(order, [0, 1, 2, 3]);
  });

  void it('mutual exclusion across OS processes: no lost update, distinct increasing tokens', async () => {
    const name = uniq('procs');
    const dir = mkdtempSync(join(tmpdir(), 'holdfast-zk-count-'));
    const file = join(dir, 'counter');
    writeFileSync(file, '0');
    try {
      const workers = [0, 1, 2].map(() => startWorker(['count', zk.connectionString, name, '15', file]));
      const results = await Promise.all(workers.map((w) => w.waitFor((l) => Array.isArray(l.tokens), 60_000)));
      assert.equal(readFileSync(file, 'utf8'), '45');
      const tokens = results.flatMap((r) => r.tokens as number[]);
      assert.equal(new Set(tokens).size, 45, 'every grant has its own token');
      for (const r of results) {
        const t = r.tokens as number[];
        for (let i = 1; i < t.length; i++) assert.ok(t[i]! > t[i - 1]!, 'tokens grow');
      }
      await Promise.all(workers.map((w) => w.exited));
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  void it('a holder killed with -9 frees the lock after its session timeout', async () => {
    const name = uniq('crash');
    const worker = startWorker(['crash', zk.connectionString, name, '1500']);
    await worker.waitFor((l) => l.event === 'held');
    worker.child.kill('SIGKILL');
    await worker.exited;
    const start = performance.now();
    const held = await a.lock(name).acquire({ timeout: 10_000 });
    const waited = performance.now() - start;
    // the session timeout (1.5 s) plus a generous allowance for a loaded machine
    assert.ok(waited < 1500 + 5000, `freed after ${Math.round(waited)} ms`);
    console.log(`# lock of a killed holder (session timeout 1500 ms) granted after ${Math.round(waited)} ms`);
    await held.release();
  });

  void it('a lock whose node is deleted by someone else signals loss; release then reports it', async () => {
    const name = uniq('deleted');
    const held = await a.lock(name).acquire();
    const lost = new Promise((r) => held.signal.addEventListener('abort', r));
    const other = await b.core.session.client();
    await new Promise<void>((resolve, reject) => other.remove(held.path, -1, (e) => (e ? reject(e) : resolve())));
    await lost;
    assert.ok(held.signal.reason instanceof LockLostError);
    assert.equal(held.signal.reason.reason, 'taken-over');
    await assert.rejects(held.release(), LockNotHeldError);
    await held[Symbol.asyncDispose]();
  });

  void it('a lost create reply is recovered by finding our own node: no orphan blocks the queue', async () => {
    const proxy = await TcpProxy.start(zk.nodes[0]!.clientPort);
    const c = await makeZk(proxy.address, { sessionTimeout: 4000 });
    try {
      const name = uniq('lostreply');
      const cut = proxy.cutAfterRequestContaining('-lock-');
      const heldP = c.lock(name).acquire({ timeout: 8000 });
      await cut;
      const held = await heldP;
      const queue = await a.lock(name).queue();
      assert.equal(queue.length, 1, `one node, not an orphan plus a second: ${queue.join(',')}`);
      assert.ok(held.path.endsWith(queue[0]!));
      await held.release();
      assert.equal(await a.lock(name).isLocked(), false);
      const next = await b.lock(name).acquire({ timeout: 1000 });
      await next.release();
    } finally {
      await c.close();
      await proxy.stop();
    }
  });

  void it('close() releases what the client holds', async () => {
    const c = await makeZk(zk.connectionString);
    const name = uniq('close');
    const held = await c.lock(name).acquire();
    await c.close();
    assert.equal(held.lost, true);
    assert.equal(await a.lock(name).isLocked(), false);
    await assert.rejects(c.lock(name).acquire(), /closed/);
  });

  void it('checks its arguments before any ZooKeeper call', async () => {
    assert.throws(() => a.lock(''), RangeError);
    assert.throws(() => a.lock(7 as unknown as string), TypeError);
    await assert.rejects(a.lock('x').acquire({ timeout: -1 }), RangeError);
    await assert.rejects(a.lock('x').acquire({ lease: 100 } as never), /not a known option/);
    await assert.rejects(a.lock('x').acquire({ signal: 'no' as never }), TypeError);
    assert.throws(() => a.semaphore('s', 0), RangeError);
    await assert.rejects(a.fencedWrite('r', 1.5, 'v'), RangeError);
    assert.throws(() => new (a.constructor as new (o: unknown) => unknown)({ connect: 'x', root: 'nope' }), TypeError);
  });
});

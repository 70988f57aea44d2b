/**
 * Redlock semaphores over 5 independent redis-server processes (AOF always, so a node killed and started again keeps
 * its slots): permits by majority, contention never admitting more holders than permits, the watchdog by quorum, the
 * fault cases of the Redlock lock (minority down → still works; majority down → a clean failure within the retry
 * budget, nothing left behind), and the case a counter per node gets wrong: three contenders on three different
 * majorities for two permits.
 */
import assert from 'node:assert/strict';
import { it } from 'node:test';
import { AcquireTimeoutError, LockLostError, QuorumNotReachedError, RedisConnectionError, Redlock, type RedisTransport } from '../../src/index.js';
import { redlockNodes } from '../support/redlock.js';
import { describeEachAdapter, sleep } from '../support/suite.js';

const N = 5;

describeEachAdapter(
  `Redlock semaphore over ${N} masters`,
  (ctx) => {
    const { clients, make } = redlockNodes(ctx, 'rs');

    void it('takes permits by majority, one or several; refuses past the limit; releases on every node', async () => {
      const redlock = make({ nodeTimeout: 2000 });
      const sem = redlock.semaphore('s', { permits: 3 });
      const two = await sem.acquire(2, { lease: 5000 });
      assert.equal(two.permits, 2);
      assert.ok(two.validity > 0 && two.validity <= 5000 - 52);
      assert.equal(two.nodes.filter((n) => n.status === 'acquired').length, N);
      assert.deepEqual(await sem.heldPerNode(), [2, 2, 2, 2, 2]);
      assert.equal(await sem.tryAcquire(2), null);
      const one = await sem.tryAcquire(1, { lease: 5000 });
      assert.ok(one);
      assert.equal(await sem.tryAcquire(1), null);
      await two.release();
      await two.release(); // idempotent
      await one.release();
      assert.deepEqual(await sem.heldPerNode(), [0, 0, 0, 0, 0]);
      assert.equal(await sem.withPermits(async (held) => held.permits, 3, { lease: 2000 }), 3);
    });

    void it('validates arguments before any Redis call', async () => {
      const redlock = make();
      assert.throws(() => redlock.semaphore('v', undefined as never), TypeError);
      assert.throws(() => redlock.semaphore('v', { permits: 0 }), RangeError);
      assert.throws(() => redlock.semaphore('v', { permits: 1.5 }), RangeError);
      assert.throws(() => redlock.semaphore('v', { permits: 2, limit: 2 } as never), TypeError);
      assert.throws(() => redlock.semaphore('', { permits: 2 }), RangeError);
      const sem = redlock.semaphore('v', { permits: 2 });
      await assert.rejects(sem.acquire(3), RangeError);
      await assert.rejects(sem.acquire(0), RangeError);
      await assert.rejects(sem.acquire(1, { lease: 1.5 }), RangeError);
      await assert.rejects(sem.tryAcquire(1, { timeout: 5 } as never), TypeError);
      await assert.rejects(sem.withPermits(null as never), TypeError);
    });

    void it('contention: three Redlocks, one permit each at a time, never more holders than permits', async () => {
      const prefix = `rsc${Math.random().toString(36).slice(2, 8)}:`;
      const sems = [0, 1, 2].map(() => make({ retryCount: Infinity, prefix }).semaphore('c', { permits: 2 }));
      let inside = 0;
      let most = 0;
      await Promise.all(
        sems.flatMap((sem) =>
          [0, 1].map(async () => {
            for (let i = 0; i < 6; i++) {
              await sem.withPermits(
                async () => {
                  inside++;
                  most = Math.max(most, inside);
                  assert.ok(inside <= 2, `${inside} holders of 2 permits`);
                  await sleep(3);
                  inside--;
                },
                1,
                { lease: 3000, timeout: 20_000 },
              );
            }
          }),
        ),
      );
      assert.equal(most, 2, 'both permits were in use at once');
    });

    void it('three contenders on three different majorities for two permits: the third is refused', async () => {
      // Each contender reaches its own three nodes (a partition as each one sees it; the other two fail at once, so
      // no late request lands there): A {0, 1, 2}, B {0, 3, 4}, C {1, 2, 3}. A counter per node would admit all three:
      // when C asks, each of its nodes holds one permit of two.
      const down: RedisTransport = {
        kind: 'down',
        evalsha: () => Promise.reject(new RedisConnectionError('node down')),
        eval: () => Promise.reject(new RedisConnectionError('node down')),
        command: () => Promise.reject(new RedisConnectionError('node down')),
        createSubscriber: () => Promise.reject(new RedisConnectionError('node down')),
      };
      const prefix = `rsp${Math.random().toString(36).slice(2, 8)}:`;
      const over = (reach: number[]): Redlock => make({ redis: clients.map((c, i) => (reach.includes(i) ? c : down)), prefix, nodeTimeout: 2000 });
      const a = await over([0, 1, 2]).semaphore('pigeon', { permits: 2 }).acquire(1, { lease: 30_000, timeout: 10_000 });
      const b = await over([0, 3, 4]).semaphore('pigeon', { permits: 2 }).acquire(1, { lease: 30_000, timeout: 10_000 });
      const all = make({ prefix }).semaphore('pigeon', { permits: 2 });
      assert.deepEqual(await all.heldPerNode(), [2, 1, 1, 1, 1]);
      const c = over([1, 2, 3]).semaphore('pigeon', { permits: 2 });
      for (let i = 0; i < 10; i++) assert.equal(await c.tryAcquire(1, { lease: 30_000 }), null, 'a third holder of two permits');
      const error = await c.acquire(1, { timeout: 300 }).then(
        () => assert.fail('a third holder of two permits'),
        (e: unknown) => e,
      );
      // the retry budget or the timeout, whichever ran out first
      assert.ok(error instanceof AcquireTimeoutError || error instanceof QuorumNotReachedError, String(error));
      assert.deepEqual(await all.heldPerNode(), [2, 1, 1, 1, 1], "C's attempts left nothing behind");
      await a.release();
      // one attempt may split C's three nodes over the two slots now free there: retries settle it
      const third = await c.acquire(1, { lease: 1000, timeout: 5000 });
      await Promise.all([b.release(), third.release()]);
    });

    void it('the watchdog renews by quorum; losing the majority aborts the signal', async (t) => {
      if (!ctx.requireServer(t, 'pauses, kills or restarts a redis-server process')) return;
      const redlock = make({ watchdogLease: 1000, watchdogInterval: 250 });
      const sem = redlock.semaphore('w', { permits: 1 });
      const lost: LockLostError[] = [];
      redlock.on('lockLost', (e) => lost.push(e));
      const held = await sem.acquire();
      await sleep(1500);
      assert.equal(held.signal.aborted, false, 'renewed past the first lease');
      assert.equal(await sem.tryAcquire(), null);
      ctx.servers.slice(0, 3).forEach((s) => s.pause());
      try {
        const t0 = performance.now();
        await new Promise<void>((resolve) => held.signal.addEventListener('abort', () => resolve(), { once: true }));
        assert.ok(performance.now() - t0 < 1200, 'aborted before the lease could lapse');
        assert.ok(held.signal.reason instanceof LockLostError);
        assert.equal(lost.length, 1);
      } finally {
        ctx.servers.slice(0, 3).forEach((s) => s.resume());
      }
      await assert.rejects(held.release(), { code: 'LOCK_NOT_HELD' });
    });

    void it('stopRefresh: the watchdog stops, the permits expire on every node one lease after the last renewal', async () => {
      const redlock = make({ watchdogLease: 800, watchdogInterval: 200 });
      const sem = redlock.semaphore('sr', { permits: 2 });
      const held = await sem.acquire(2);
      await sleep(1000);
      assert.equal(held.signal.aborted, false, 'renewed by quorum');
      held.stopRefresh();
      assert.equal(held.refreshing, false);
      await new Promise((r) => held.signal.addEventListener('abort', r, { once: true }));
      assert.equal((held.signal.reason as LockLostError).reason, 'expired');
      // a renewal already in flight when the watchdog stopped may still have renewed the keys once
      const until = performance.now() + 800 + 500;
      while ((await sem.heldPerNode()).some((n) => n !== 0)) {
        assert.ok(performance.now() < until, 'the permits outlived their last renewal by more than one lease');
        await sleep(50);
      }
    });

    void it('a minority down: still acquires, extends, refuses past the limit and releases', async (t) => {
      if (!ctx.requireServer(t, 'pauses, kills or restarts a redis-server process')) return;
      const redlock = make();
      const sem = redlock.semaphore('m', { permits: 2 });
      ctx.servers[3]!.pause();
      ctx.servers[4]!.pause();
      try {
        const held = await sem.acquire(2, { lease: 3000 });
        assert.equal(held.nodes.filter((n) => n.status === 'error').length, 2);
        await held.extend(4000);
        assert.equal(await sem.tryAcquire(), null);
        await held.release();
        const again = await sem.tryAcquire(1, { lease: 1000 });
        assert.ok(again);
        await again.release();
      } finally {
        ctx.servers[3]!.resume();
        ctx.servers[4]!.resume();
      }
    });

    void it('a majority down: a clean QuorumNotReachedError within the retry budget, no partial state left', async (t) => {
      if (!ctx.requireServer(t, 'pauses, kills or restarts a redis-server process')) return;
      const redlock = make({ retryCount: 2, retryDelay: 50, retryJitter: 10, nodeTimeout: 100 });
      const sem = redlock.semaphore('M', { permits: 3 });
      await Promise.all(ctx.servers.slice(0, 3).map((s) => s.kill()));
      try {
        const t0 = performance.now();
        const error = await sem.acquire(2, { lease: 5000 }).then(
          () => assert.fail('a false success'),
          (e: unknown) => e,
        );
        assert.ok(error instanceof QuorumNotReachedError, String(error));
        assert.equal(error.attempts, 3);
        assert.equal(error.nodes.filter((n) => n.status === 'error').length, 3);
        assert.ok(performance.now() - t0 < 1500);
        await assert.rejects(sem.tryAcquire(), QuorumNotReachedError);
        await assert.rejects(sem.acquire(1, { timeout: 150 }), AcquireTimeoutError);
        const views = await sem.heldPerNode();
        assert.deepEqual(views.slice(3), [0, 0], 'the live nodes were released after every failed attempt');
      } finally {
        await Promise.all(ctx.servers.slice(0, 3).map((s) => s.launch()));
      }
    });
  },
  { servers: N, server: { args: ['--appendonly', 'yes', '--appendfsync', 'always'] }, notOnPostgres: 'the Redlock semaphore runs on a quorum of independent Redis servers: it has no meaning on one PostgreSQL' },
);

/**
 * Every primitive on a real Redis Cluster (3 masters, one replica each), with each cluster client (ioredis `Cluster`,
 * node-redis `createCluster`, GLIDE `GlideClusterClient`): read-write lock, both semaphores, latch, FairLock with sharded
 * pub/sub on and off, getOrLoad, the scheduler and the segmented stock, each on names spread over the three masters, and
 * a FairLock whose slot is migrated key by key while two clients contend for it (exclusion and token order kept).
 * Lock, MultiLock over several slots and the latch's sharded wake-up: cluster.test.ts.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { slotOf } from '../../src/keys.js';
import type { Holdfast } from '../../src/index.js';
import { RedisCluster } from '../support/cluster.js';
import { clusterClients, clusterHoldfasts } from '../support/cluster-clients.js';

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

let cluster: RedisCluster;

before(async () => {
  cluster = await RedisCluster.start(3, 1);
});
after(async () => {
  await cluster?.stop();
});

/** Names (from `stem`) whose keys (`keyOf`) land `perMaster` times on each of the three masters: every shard is tested. */
async function spreadNames(stem: string, keyOf: (name: string) => string, perMaster = 2): Promise<string[]> {
  const byMaster = new Map<number, string[]>();
  for (let i = 0; i < 200; i++) {
    const name = `${stem}-${i}`;
    const owner = await cluster.ownerOf(slotOf(keyOf(name)));
    const names = byMaster.get(owner) ?? [];
    if (names.length < perMaster) byMaster.set(owner, [...names, name]);
    if (byMaster.size === 3 && [...byMaster.values()].every((n) => n.length === perMaster)) return [...byMaster.values()].flat();
  }
  throw new Error(`${stem}: no names on every master`);
}

/** Polls `check` until it holds, or fails after `ms`. */
async function until(check: () => Promise<boolean>, ms: number, what: string): Promise<void> {
  const deadline = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(10);
  }
}

for (const kind of clusterClients) {
  void describe(`every primitive on a Redis Cluster with ${kind.name}`, () => {
    const clients = clusterHoldfasts(kind, () => cluster);
    const prefix = `p${Math.random().toString(36).slice(2, 6)}:`;
    const pair = async (sharded = true): Promise<[Holdfast, Holdfast]> => [
      await clients.open({ prefix, shardedPubSub: sharded }),
      await clients.open({ prefix, shardedPubSub: sharded }),
    ];
    after(() => clients.closeAll());

    void it('read-write lock: readers share, a writer excludes, waiters are woken (on every master)', async () => {
      const [a, b] = await pair();
      const names = await spreadNames('rw', (n) => a.core.keys.lock(n));
      for (const name of names) {
        const readers = await Promise.all([a, b, a].map((hf) => hf.readWriteLock(name).readLock().acquire({ timeout: 2000 })));
        assert.equal((await a.readWriteLock(name).inspect()).readers, 3, name);
        assert.equal(await b.readWriteLock(name).writeLock().tryAcquire(), null, name);
        const writer = b.readWriteLock(name).writeLock().acquire({ timeout: 5000 });
        await sleep(50);
        const t0 = performance.now();
        for (const r of readers) await r.release();
        const w = await writer;
        assert.ok(performance.now() - t0 < 1500, `${name}: the writer was woken by the last reader's release`);
        assert.equal(await a.readWriteLock(name).readLock().tryAcquire(), null, `${name}: no reader while written`);
        await w.release();
      }
    });

    void it('semaphore: never more holders than permits, a release wakes a waiter (on every master)', async () => {
      const [a, b] = await pair();
      const names = await spreadNames('sem', (n) => a.core.keys.lock(n));
      for (const name of names) {
        assert.equal(await a.semaphore(name).trySetPermits(2), true);
        const one = await a.semaphore(name).acquire();
        const two = await b.semaphore(name).acquire();
        assert.equal(await b.semaphore(name).tryAcquire(), null, `${name}: both permits taken`);
        const waiting = b.semaphore(name).acquire(1, { timeout: 5000 });
        await sleep(50);
        const t0 = performance.now();
        await one.release();
        const three = await waiting;
        assert.ok(performance.now() - t0 < 1500, `${name}: woken by the release`);
        await two.release();
        await three.release();
        assert.equal(await a.semaphore(name).availablePermits(), 2, name);
      }
    });

    void it('permit-expirable semaphore: leases with ids, released by id from another client (on every master)', async () => {
      const [a, b] = await pair();
      const names = await spreadNames('pse', (n) => a.core.keys.lock(n));
      for (const name of names) {
        assert.equal(await a.permitExpirableSemaphore(name).trySetPermits(2), true);
        const p = await a.permitExpirableSemaphore(name).acquire(2, { lease: 5000 });
        assert.equal(await b.permitExpirableSemaphore(name).tryAcquire(1), null, name);
        const waiting = b.permitExpirableSemaphore(name).acquire(1, { timeout: 5000, lease: 5000 });
        await sleep(50);
        await b.permitExpirableSemaphore(name).release(p.id);
        const q = await waiting;
        assert.deepEqual(await a.permitExpirableSemaphore(name).inspect(), { name, available: 1, acquired: 1, leases: 1 });
        await q.release();
      }
    });

    void it('count-down latch: awaiters on every master open at zero', async () => {
      const [a, b] = await pair();
      const names = await spreadNames('latch', (n) => a.core.keys.lock(n));
      for (const name of names) assert.equal(await a.countDownLatch(name).trySetCount(2), true);
      const waiting = names.map((name) => b.countDownLatch(name).await({ timeout: 8000 }));
      await sleep(100);
      for (const name of names) await a.countDownLatch(name).countDown();
      assert.equal(await b.countDownLatch(names[0]!).getCount(), 1, 'one count down left');
      const t0 = performance.now();
      for (const name of names) await b.countDownLatch(name).countDown();
      assert.deepEqual(await Promise.all(waiting), names.map(() => true));
      assert.ok(performance.now() - t0 < 1500, 'woken by the messages');
    });

    for (const sharded of [true, false]) {
      void it(`FairLock (shardedPubSub: ${sharded}): waiters across two clients get it in arrival order, woken by the release`, async () => {
        const [a, b] = await pair(sharded);
        const names = await spreadNames(`fair-${sharded}`, (n) => a.core.keys.lock(n), 1);
        for (const name of names) {
          const held = await a.fairLock(name).acquire();
          const order: number[] = [];
          const waits: Promise<void>[] = [];
          for (let i = 0; i < 4; i++) {
            const hf = i % 2 === 0 ? b : a;
            waits.push(hf.fairLock(name).withLock(async () => void order.push(i), { timeout: 10_000 }));
            await until(async () => (await a.fairLock(name).inspect()).waiters.length > i, 5000, `${i + 1} waiters`);
          }
          const t0 = performance.now();
          await held.release();
          await Promise.all(waits);
          assert.deepEqual(order, [0, 1, 2, 3], name);
          // four hand-overs, each a message to the next waiter: far below one fallback poll each
          assert.ok(performance.now() - t0 < 2000, `${name}: hand-overs took ${Math.round(performance.now() - t0)} ms`);
        }
      });
    }

    void it('getOrLoad: 20 concurrent misses from two clients load once, on keys on every master', async () => {
      const [a, b] = await pair();
      const keys = await spreadNames('cache', (k) => a.core.keys.cacheValue(k));
      for (const key of keys) {
        let loads = 0;
        const loader = async (): Promise<{ key: string; n: number }> => {
          await sleep(50);
          return { key, n: ++loads };
        };
        const values = await Promise.all(Array.from({ length: 20 }, (_, i) => (i % 2 ? a : b).getOrLoad(key, loader, { ttl: 10_000 })));
        assert.equal(loads, 1, `${key}: loaded once`);
        for (const v of values) assert.deepEqual(v, { key, n: 1 });
      }
    });

    void it('scheduler: two instances run each tick of jobs on every master once', async () => {
      const [a, b] = await pair();
      const jobs = await spreadNames('job', (j) => a.core.keys.job(j), 1);
      const ran = new Map<string, number[]>(jobs.map((j) => [j, []]));
      const sa = a.scheduler();
      const sb = b.scheduler();
      await sleep(1000 - (Date.now() % 1000) + 300); // ticks well inside the run
      for (const s of [sa, sb]) for (const j of jobs) s.schedule(j, '* * * * * *', ({ tick }) => void ran.get(j)!.push(tick.getTime()));
      await sleep(2500);
      await Promise.all([sa.stop(), sb.stop()]);
      for (const [j, ticks] of ran) {
        assert.ok(ticks.length >= 2, `${j} ran ${ticks.length} ticks`);
        assert.equal(new Set(ticks).size, ticks.length, `${j}: no tick twice`);
      }
    });

    void it('segmented stock: 200 concurrent takes from two clients drain it to zero without overselling (on every master)', async () => {
      const [a, b] = await pair();
      const names = await spreadNames('stock', (n) => a.core.keys.stockSegment(n, 0), 1);
      for (const name of names) {
        await a.segmentedStock(name, { segments: 8 }).set(150);
        const taken = await Promise.all(Array.from({ length: 200 }, (_, i) => (i % 2 ? a : b).segmentedStock(name, { segments: 8 }).take(1)));
        assert.equal(taken.filter(Boolean).length, 150, name);
        assert.equal(await b.segmentedStock(name, { segments: 8 }).available(), 0, name);
      }
    });

    void it('FairLock survives a slot migration (MOVED/ASK/TRYAGAIN) mid-run: exclusion and token order intact', async (t) => {
      const [a, b] = await pair();
      // A slot of its own per client, so that each migrates the same number of keys.
      const name = `fair-migrating-${clusterClients.indexOf(kind)}`;
      const slot = await cluster.keySlot(a.core.keys.lock(name));
      const from = await cluster.ownerOf(slot);
      const to = (await cluster.masters()).find((s) => s.port !== from)!.port;
      let inside = 0;
      let overlaps = 0;
      let stop = false;
      const tokens: number[] = [];
      const errors: unknown[] = [];
      const worker = async (hf: Holdfast): Promise<void> => {
        while (!stop) {
          try {
            await hf.fairLock(name).withLock(
              async ({ token }) => {
                tokens.push(token);
                if (++inside > 1) overlaps++;
                await sleep(1);
                inside--;
              },
              // While the slot migrates, a release is refused (TRYAGAIN) until it ends: the lease outlasts it.
              { lease: 15_000, timeout: 40_000 },
            );
          } catch (error) {
            errors.push(error);
          }
        }
      };
      // filler keys in the lock's slot, so the lock's own keys move somewhere in the middle of the migration
      const filler = Array.from({ length: 300 }, (_, i) => [`${a.core.keys.base(name)}:filler:${i}`, 'x']).flat();
      await a.core.command(['MSET', ...filler], filler[0]);
      const redirectsBefore = await cluster.redirections();
      const workers = [worker(a), worker(b), worker(a)];
      await sleep(300);
      const migrationStart = performance.now();
      const moved = await cluster.migrateSlot(slot, to, 20);
      const migrationMs = performance.now() - migrationStart;
      await sleep(500);
      stop = true;
      await Promise.all(workers);
      const redirects = (await cluster.redirections()) - redirectsBefore;
      t.diagnostic(`migrated ${moved} keys in ${Math.round(migrationMs)} ms; ${tokens.length} fair-lock holds; ${redirects} MOVED/ASK/TRYAGAIN replies`);
      assert.ok(moved > 300, `migrated ${moved} keys`);
      assert.ok(redirects > 0, 'the clients were redirected at least once');
      assert.equal(await cluster.ownerOf(slot), to);
      assert.deepEqual(errors.map(String), []);
      assert.equal(overlaps, 0);
      assert.ok(tokens.length > 10, `${tokens.length} holds`);
      for (let i = 1; i < tokens.length; i++) assert.ok(tokens[i]! > tokens[i - 1]!, `token ${tokens[i]} after ${tokens[i - 1]}`);
      // it still works on its new master, a waiter woken by the release
      const held = await a.fairLock(name).acquire({ lease: 5000 });
      const waiting = b.fairLock(name).acquire({ timeout: 5000 });
      await sleep(50);
      await held.release();
      await (await waiting).release();
    });
  });
}

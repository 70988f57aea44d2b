/**
 * Redis Cluster (3 masters, one replica each): hash tags keep every key and channel of a lock in one slot, locks in different slots,
 * sharded pub/sub (SPUBLISH from the scripts, SSUBSCRIBE on the shard), and a slot migrated key by key, for longer than
 * `commandTimeout`, while two clients contend for a lock in it (MOVED / ASK / TRYAGAIN), with an ioredis `Cluster`, a
 * node-redis `createCluster` and a GLIDE `GlideClusterClient`. Every other primitive on a Cluster: cluster-primitives.test.ts.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { after, before, describe, it } from 'node:test';
import { Holdfast } from '../../src/index.js';
import { Keys } from '../../src/keys.js';
import { RedisCluster } from '../support/cluster.js';
import { clusterClients } from '../support/cluster-clients.js';
import { REDIS_CLI } from '../support/binaries.js';
import { until } from '../support/redis-cli.js';

let cluster: RedisCluster;

before(async () => {
  cluster = await RedisCluster.start(3, 1);
});
after(async () => {
  await cluster?.stop();
});

interface ClusterCase {
  name: string;
  connect(): Promise<{ client: unknown; close(): Promise<void> }>;
}

const cases: ClusterCase[] = clusterClients.map((kind) => ({ name: kind.name, connect: () => kind.connect(cluster) }));

void it('every key and channel of one lock name lives in one slot', async () => {
  const keys = new Keys('app:');
  for (const name of ['orders:42', 'a', 'x{y}z', 'ünïcode']) {
    const all = [keys.lock(name), keys.fence(name), keys.channel(name), keys.releaseMarker(name, 'r1')];
    const slots = await Promise.all(all.map((k) => cluster.keySlot(k)));
    assert.equal(new Set(slots).size, 1, `${name}: ${all.join(', ')} → ${slots.join(', ')}`);
  }
});

for (const c of cases) {
  void describe(`Redis Cluster with ${c.name}`, () => {
    const opened: { close(): Promise<void> }[] = [];
    const prefix = `c${Math.random().toString(36).slice(2, 6)}:`;

    async function holdfast(keyPrefix = prefix): Promise<Holdfast> {
      const conn = await c.connect();
      const hf = new Holdfast({ redis: conn.client, prefix: keyPrefix, shardedPubSub: true });
      opened.push({ close: async () => void (await hf.close(), await conn.close()) });
      return hf;
    }

    after(async () => {
      for (const o of opened) await o.close().catch(() => {});
    });

    void it('locks on names in different slots (all three masters)', async () => {
      const a = await holdfast();
      const b = await holdfast();
      const names = Array.from({ length: 24 }, (_, i) => `slot-${i}`);
      const owners = new Set(await Promise.all(names.map(async (n) => cluster.ownerOf(await cluster.keySlot(a.core.keys.lock(n))))));
      assert.equal(owners.size, 3, 'names spread over every master');
      const held = await Promise.all(names.map((n) => a.lock(n).acquire({ lease: 10_000 })));
      for (const n of names) assert.equal(await b.lock(n).tryAcquire(), null, n);
      for (const h of held) await h.release();
      const again = await Promise.all(names.map((n) => b.lock(n).acquire({ lease: 10_000, timeout: 1000 })));
      for (const [i, h] of again.entries()) assert.ok(h.token > held[i]!.token);
      for (const h of again) await h.release();
    });

    void it('sharded pub/sub wakes a waiter on release (not the lease fallback)', async () => {
      const a = await holdfast();
      const b = await holdfast();
      const held = await a.lock('wake').acquire(); // watchdog lease: 30 s, so only a message can wake the waiter early
      const waiting = b.lock('wake').acquire({ timeout: 8000 });
      await new Promise((r) => setTimeout(r, 400));
      const releasedAt = performance.now();
      await held.release();
      const next = await waiting;
      const woke = performance.now() - releasedAt;
      assert.ok(woke < 1500, `woken ${Math.round(woke)} ms after the release`);
      await next.release();
    });

    void it('a multi-lock over names in different slots (one script per lock, sorted): all or nothing', async () => {
      const a = await holdfast();
      const b = await holdfast();
      const names = ['ml-a', 'ml-b', 'ml-c', 'ml-d', 'ml-e', 'ml-f'];
      const owners = new Set(await Promise.all(names.map(async (n) => cluster.ownerOf(await cluster.keySlot(a.core.keys.lock(n))))));
      assert.ok(owners.size >= 2, 'names on several masters');
      const held = await a.multiLock(names).acquire({ lease: 10_000 });
      assert.equal(await b.lock('ml-d').tryAcquire(), null);
      assert.equal(await b.multiLock(['ml-z', 'ml-c']).tryAcquire(), null);
      assert.equal(await b.lock('ml-z').isLocked(), false, 'the failed multi-lock left nothing held');
      await held.release();
      const again = await b.multiLock(names).acquire({ lease: 10_000, timeout: 2000 });
      await again.release();
    });

    void it('a count-down latch wakes its waiters over sharded pub/sub', async () => {
      const a = await holdfast();
      const b = await holdfast();
      const name = `latch-${c.name.length}`;
      assert.equal(await a.countDownLatch(name).trySetCount(1), true);
      const waiting = b.countDownLatch(name).await({ timeout: 8000 });
      await new Promise((r) => setTimeout(r, 300));
      const t0 = performance.now();
      await a.countDownLatch(name).countDown();
      assert.equal(await waiting, true);
      assert.ok(performance.now() - t0 < 1500, 'woken by the message');
    });

    void it('replicaSync: WAIT runs on the master of the lock\'s slot (its paused replica makes it fail)', async () => {
      const a = await holdfast();
      const name = `wait-${c.name.length}`;
      const master = await cluster.ownerOf(await cluster.keySlot(a.core.keys.lock(name)));
      const replica = await cluster.replicaOf(master);
      const sync = { replicas: 1, timeout: 300 };
      const held = await a.lock(name).acquire({ lease: 5000, replicaSync: sync });
      const onReplica = spawnSync(REDIS_CLI, ['-p', String(replica.port)], { input: `READONLY\nEXISTS "${a.core.keys.lock(name)}"\n` });
      assert.equal(onReplica.stdout.toString().trim().split('\n').pop(), '1', 'on the replica of the right master');
      await held.release();
      // A WAIT sent to any other master would see its own (idle) replica and report success.
      replica.pause();
      try {
        await assert.rejects(a.lock(name).acquire({ lease: 5000, replicaSync: sync }), { code: 'REPLICATION_NOT_REACHED' });
      } finally {
        replica.resume();
      }
      assert.equal(await a.lock(name).isLocked(), false, 'rolled back');
    });

    void it('survives a slot migration (MOVED/ASK/TRYAGAIN) longer than commandTimeout, mutual exclusion intact', async (t) => {
      const a = await holdfast();
      const b = await holdfast();
      // Another prefix: the same name is a free lock in the same slot (the hash tag is the name).
      const other = await holdfast(`o${prefix}`);
      // A slot of its own per client, so that each migrates the same number of keys.
      const name = `migrating-${cases.indexOf(c)}`;
      const slot = await cluster.keySlot(a.core.keys.lock(name));
      const from = await cluster.ownerOf(slot);
      const to = (await cluster.masters()).find((s) => s.port !== from)!.port;
      let counter = 0;
      let inside = 0;
      let overlaps = 0;
      let stop = false;
      let cycles = 0;
      let longest = 0;
      const errors: unknown[] = [];
      const tokens: number[] = [];
      const worker = async (hf: Holdfast): Promise<void> => {
        while (!stop) {
          const started = performance.now();
          try {
            await hf.lock(name).withLock(
              async ({ token }) => {
                tokens.push(token);
                if (++inside > 1) overlaps++;
                const v = counter;
                await new Promise((r) => setTimeout(r, 1));
                counter = v + 1;
                inside--;
              },
              // The lease outlasts the migration: a holder cannot release until the migration ends. A wake-up
              // published just as the slot changes hands can be lost: the waiter then tries again when the lease
              // it was told of ends, within its timeout.
              { lease: 15_000, timeout: 40_000 },
            );
            cycles++;
            longest = Math.max(longest, performance.now() - started);
          } catch (error) {
            errors.push(error);
          }
        }
      };
      // Filler keys in the lock's slot (same hash tag), so the migration has keys to move batch by batch while the
      // lock's own keys (hash, fence counter) move at some point in the middle. While the slot migrates, a script
      // whose keys are not all on one node is refused with TRYAGAIN: a free lock's acquisition, a release (some of
      // their keys do not exist), any script once its keys are split between the nodes. 30 batches 200 ms apart make
      // that last longer than commandTimeout (5 s): waiting acquisitions and releases must outlast it.
      const filler = Array.from({ length: 300 }, (_, i) => [`${a.core.keys.base(name)}:filler:${i}`, 'x']).flat();
      await a.core.command(['MSET', ...filler], filler[0]);
      const redirectsBefore = await cluster.redirections();
      const workers = [worker(a), worker(b)];
      await new Promise((r) => setTimeout(r, 300));
      const migrationStart = performance.now();
      let migrating = true;
      const migration = cluster.migrateSlot(slot, to, 200).finally(() => (migrating = false));
      // A free lock cannot be taken until the migration ends (its key does not exist): the acquisition waits it out.
      await until(() => cluster.isMigrating(slot), 10_000, `slot ${slot} migrating`);
      const freeDuringMigration = migrating;
      let freeMs = NaN;
      const freeTaken = other
        .lock(name)
        .acquire({ lease: 30_000, timeout: 30_000 })
        .then(async (held) => {
          freeMs = performance.now() - migrationStart;
          await held.release();
        })
        .then(() => 'ok', String);
      const moved = await migration;
      const migrationMs = performance.now() - migrationStart;
      await new Promise((r) => setTimeout(r, 500));
      stop = true;
      await Promise.all(workers);
      assert.ok(freeDuringMigration, 'the slot was still migrating when the free lock was asked for');
      assert.equal(await freeTaken, 'ok', 'the free lock, asked for during the migration');
      const redirects = (await cluster.redirections()) - redirectsBefore;
      t.diagnostic(
        `migrated ${moved} keys in ${Math.round(migrationMs)} ms; the free lock taken ${Math.round(freeMs)} ms after it began; ` +
          `${cycles} lock cycles (the longest ${Math.round(longest)} ms); ${redirects} MOVED/ASK/TRYAGAIN replies from the servers`,
      );
      assert.ok(moved > 300, `migrated ${moved} keys`);
      assert.ok(migrationMs > a.core.settings.commandTimeout, 'the migration outlasted commandTimeout');
      assert.ok(redirects > 0, 'the clients were redirected at least once');
      assert.equal(await cluster.ownerOf(slot), to);
      assert.deepEqual(errors.map(String), []);
      assert.equal(overlaps, 0);
      assert.equal(counter, cycles);
      for (let i = 1; i < tokens.length; i++) assert.ok(tokens[i]! > tokens[i - 1]!, `token ${tokens[i]} after ${tokens[i - 1]}: the fence moved with the slot`);
      // The lock still works on its new node.
      const held = await a.lock(name).acquire({ lease: 5000 });
      assert.equal(await b.lock(name).tryAcquire(), null);
      await held.release();
    });

    void it('a waiter subscribed while its slot migrates is woken by the next release (not the lease fallback)', async () => {
      const a = await holdfast();
      const b = await holdfast();
      const name = `rewoken-${cases.indexOf(c)}`;
      const slot = await cluster.keySlot(a.core.keys.lock(name));
      const from = await cluster.ownerOf(slot);
      const to = (await cluster.masters()).find((s) => s.port !== from)!.port;
      const held = await a.lock(name).acquire({ lease: 20_000 });
      const waiting = b.lock(name).acquire({ lease: 5000, timeout: 15_000 });
      await new Promise((r) => setTimeout(r, 300)); // subscribed on the old node
      await cluster.migrateSlot(slot, to, 20);
      // The old node dropped the subscription with the slot; the client subscribes again on the new one. A release
      // before then wakes nobody (the waiter would sleep until the 20 s lease ends).
      await new Promise((r) => setTimeout(r, 1000));
      const releasedAt = performance.now();
      await held.release();
      const next = await waiting;
      const woke = performance.now() - releasedAt;
      await next.release();
      assert.ok(woke < 1500, `woken ${Math.round(woke)} ms after the release`);
    });
  });
}

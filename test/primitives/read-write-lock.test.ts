import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { Redis } from 'ioredis';
import { AcquireTimeoutError, LockLostError, LockNotHeldError, UpgradeRefusedError, type Holdfast } from '../../src/index.js';
import { makeHoldfast, postgresUrlOf, serverAdapter } from '../support/clients.js';
import { openPool } from '../support/postgres.js';
import { RedisServer } from '../support/redis-server.js';
import { describeEachAdapter, sleep } from '../support/suite.js';
import { startWorker, type Worker } from './fixtures/spawn.js';

// The per-adapter suites have servers of their own; this one serves the describes outside them.
let server: RedisServer;
before(async () => {
  server = await RedisServer.start();
});
after(async () => {
  await server.stop();
});

describeEachAdapter('ReadWriteLock', (ctx) => {
  void it('admits many readers at once and no writer while they read', async () => {
    const rw = ctx.holdfast.readWriteLock('rw-many');
    const readers = await Promise.all([1, 2, 3].map(() => rw.readLock().acquire({ timeout: 1000 })));
    assert.equal((await rw.inspect()).readers, 3);
    assert.equal(await rw.writeLock().tryAcquire(), null);
    for (const r of readers) await r.release();
    const w = await rw.writeLock().acquire({ timeout: 1000 });
    assert.ok(w.token > 0);
    assert.equal(await rw.readLock().tryAcquire(), null);
    assert.equal(await rw.writeLock().tryAcquire(), null);
    await w.release();
    const info = await rw.inspect();
    assert.equal(info.writer, null);
    assert.equal(info.readers, 0);
  });

  void it('wakes a waiting writer when the last reader leaves, and waiting readers when the writer leaves', async () => {
    const rw = ctx.holdfast.readWriteLock('rw-wake');
    const r1 = await rw.readLock().acquire();
    const t0 = performance.now();
    const writer = rw.writeLock().acquire({ timeout: 3000 });
    await sleep(100);
    await r1.release();
    const w = await writer;
    assert.ok(performance.now() - t0 < 600, 'woken by pub/sub, not by polling');
    const reader = rw.readLock().acquire({ timeout: 3000 });
    await sleep(100);
    const t1 = performance.now();
    await w.release();
    await (await reader).release();
    assert.ok(performance.now() - t1 < 400);
  });

  void it('is reentrant for readers and writers inside withLock, and counts holds', async () => {
    const rw = ctx.holdfast.readWriteLock('rw-reentrant');
    await rw.writeLock().withLock(async ({ lock, token }) => {
      const again = await rw.writeLock().acquire({ timeout: 0 });
      assert.equal(again.holdCount, 2);
      assert.equal(again.token, token);
      await again.release();
      assert.equal(lock.holdCount, 1);
    });
    await rw.readLock().withLock(async () => {
      const again = await rw.readLock().acquire({ timeout: 0 });
      assert.equal(again.holdCount, 2);
      await again.release();
      assert.equal((await rw.inspect()).readers, 1);
    });
    assert.equal((await rw.inspect()).readers, 0);
  });

  void it('write and read lock: an explicit owner id held from two clients gives up one hold per release, the last frees it', async () => {
    const b = await ctx.open({ prefix: ctx.holdfast.settings.prefix });
    const markerPrefix = `${ctx.holdfast.settings.prefix}{rw-handover}:rel:`;
    // the live release markers of this name: Redis keys, or the rows of the PostgreSQL schema's marker table
    const probe = ctx.adapter.postgres
      ? (() => {
          const { url, schema } = postgresUrlOf(ctx.urls[0]!);
          const pool = openPool(url, 1);
          return {
            markers: async () =>
              Number((await pool.query(`SELECT count(*) AS n FROM "${schema}".marker WHERE left(key, length($1)) = $1 AND expires_at > "${schema}".now_ms()`, [markerPrefix])).rows[0]!.n),
            disconnect: () => void pool.end(),
          };
        })()
      : (() => {
          const redis = new Redis(ctx.server.url);
          return { markers: async () => (await redis.keys(`${markerPrefix}*`)).length, disconnect: () => redis.disconnect() };
        })();
    try {
      const here = await ctx.holdfast.readWriteLock('rw-handover').writeLock().acquire({ owner: 'job-9' });
      const there = await b.holdfast.readWriteLock('rw-handover').writeLock().acquire({ owner: 'job-9', timeout: 0 });
      assert.equal(there.holdCount, 2);
      assert.equal(there.token, here.token);
      // the last hold in this client but not the owner's last: sent without a marker, told holds remain (-2), sent again with one
      await here.release();
      let info = await ctx.holdfast.readWriteLock('rw-handover').inspect();
      assert.equal(info.writer, 'job-9');
      assert.equal(info.writeHoldCount, 1, 'one hold released, not the lock');
      assert.equal(there.lost, false);
      await there.release();
      info = await ctx.holdfast.readWriteLock('rw-handover').inspect();
      assert.equal(info.writer, null);
      assert.equal(await probe.markers(), 1, 'one release marker: written only by the release that left a hold');
      // the same for the read lock
      const r1 = await ctx.holdfast.readWriteLock('rw-handover').readLock().acquire({ owner: 'job-10' });
      const r2 = await b.holdfast.readWriteLock('rw-handover').readLock().acquire({ owner: 'job-10', timeout: 0 });
      assert.equal(r2.holdCount, 2);
      await r1.release();
      assert.equal(await b.holdfast.readWriteLock('rw-handover').readLock().holdCount({ owner: 'job-10' }), 1, 'one read hold released, not both');
      assert.equal(r2.lost, false);
      await r2.release();
      assert.equal((await ctx.holdfast.readWriteLock('rw-handover').inspect()).readers, 0);
    } finally {
      probe.disconnect();
      await b.dispose();
    }
  });

  void it('downgrades write → read for the same owner, and then lets other readers in', async () => {
    const rw = ctx.holdfast.readWriteLock('rw-downgrade');
    const w = await rw.writeLock().acquire();
    assert.equal(await rw.readLock().tryAcquire(), null, 'another owner may not read during the write');
    const r = await w.downgrade();
    assert.equal(w.released, true);
    assert.equal((await rw.inspect()).writer, null);
    const other = await rw.readLock().acquire({ timeout: 500 });
    assert.equal(await rw.writeLock().tryAcquire(), null);
    await other.release();
    await r.release();
    // in a withLock chain: a read inside the write is a downgrade
    await rw.writeLock().withLock(async () => {
      const inner = await rw.readLock().acquire({ timeout: 0 });
      assert.equal(inner.owner, (await rw.inspect()).writer);
      await inner.release();
    });
  });

  void it('refuses an upgrade read → write with UpgradeRefusedError instead of deadlocking', async () => {
    const rw = ctx.holdfast.readWriteLock('rw-upgrade');
    await rw.readLock().withLock(async () => {
      await assert.rejects(rw.writeLock().acquire({ timeout: 5000 }), UpgradeRefusedError);
    });
    const r = await rw.readLock().acquire();
    await assert.rejects(rw.writeLock().acquire({ owner: r.owner }), (e: unknown) => e instanceof UpgradeRefusedError && e.code === 'UPGRADE_REFUSED');
    await r.release();
  });

  void it('holds back new readers while a writer waits (writers are not starved)', async () => {
    const rw = ctx.holdfast.readWriteLock('rw-starve');
    const r1 = await rw.readLock().acquire();
    const writer = rw.writeLock().acquire({ timeout: 3000 });
    await sleep(100);
    assert.equal((await rw.inspect()).waitingWriters, 1);
    assert.equal(await rw.readLock().tryAcquire(), null, 'a new reader waits behind the writer');
    // an existing reader may re-enter (else it would deadlock with the writer)
    const again = await rw.readLock().acquire({ owner: r1.owner, timeout: 0 });
    await again.release();
    await r1.release();
    const w = await writer;
    assert.equal((await rw.inspect()).waitingWriters, 0);
    await w.release();
  });

  void it('withdraws the intent of a writer that gives up, and wakes the readers it held back', async () => {
    const rw = ctx.holdfast.readWriteLock('rw-withdraw');
    const r1 = await rw.readLock().acquire();
    const writer = rw.writeLock().acquire({ timeout: 300 });
    await sleep(50);
    const reader = rw.readLock().acquire({ timeout: 2000 });
    await assert.rejects(writer, AcquireTimeoutError);
    const t0 = performance.now();
    await (await reader).release();
    assert.ok(performance.now() - t0 < 500);
    assert.equal((await rw.inspect()).waitingWriters, 0);
    await r1.release();
  });

  void it('lets a crashed waiting writer hold readers back only until its intent lapses', async (t) => {
    if (!ctx.requireRedis(t, "plants the intent a killed waiting writer leaves behind with raw Redis commands (TIME, ZADD on the intents zset)")) return;
    const rw = ctx.holdfast.readWriteLock('rw-intent', { writerIntent: 300 });
    // plant the intent a killed waiting writer leaves behind (expiry in Redis time)
    const key = ctx.holdfast.core.keys.rwIntents('rw-intent');
    const [sec, usec] = (await ctx.holdfast.core.command(['TIME'], key)) as string[];
    const redisNow = Number(sec) * 1000 + Math.floor(Number(usec) / 1000);
    await ctx.holdfast.core.command(['ZADD', key, String(redisNow + 300), 'dead-writer'], key);
    assert.equal(await rw.readLock().tryAcquire(), null);
    const t0 = performance.now();
    const r = await rw.readLock().acquire({ timeout: 2000 });
    const waited = performance.now() - t0;
    assert.ok(waited > 150 && waited < 1500, `reader waited ${Math.round(waited)} ms for a 300 ms intent`);
    await r.release();
  });

  void it('a waiting writer keeps its intent alive for as long as it waits', async () => {
    const rw = ctx.holdfast.readWriteLock('rw-refresh', { writerIntent: 600 });
    const r1 = await rw.readLock().acquire(); // watchdog lease: held until released
    const writer = rw.writeLock().acquire({ timeout: 5000 });
    await sleep(1300); // over two intent lifetimes: the writer must have refreshed it
    assert.equal((await rw.inspect()).waitingWriters, 1);
    assert.equal(await rw.readLock().tryAcquire(), null);
    await r1.release();
    await (await writer).release();
  });

  void it('keeps watchdog leases alive, and aborts the signal when a read hold is lost', async () => {
    const rw = ctx.holdfast.readWriteLock('rw-watchdog');
    const rw2 = ctx.holdfast.readWriteLock('rw-watchdog-w');
    const r = await rw.readLock().acquire();
    const w = await rw2.writeLock().acquire();
    await sleep(1800); // > watchdogLease 1500: only the watchdog keeps them
    assert.equal((await rw.inspect()).readers, 1);
    assert.equal((await rw2.inspect()).writer, w.owner);
    assert.equal(r.lost || w.lost, false);
    await r.release();
    await w.release();
    const fixed = await rw.readLock().acquire({ lease: 200 });
    const lost = new Promise((resolve) => fixed.signal.addEventListener('abort', () => resolve(fixed.signal.reason)));
    const reason = await lost;
    assert.ok(reason instanceof LockLostError);
    await sleep(20); // the signal fires a little before Redis' expiry (drift allowance)
    assert.equal((await rw.inspect()).readers, 0);
    await assert.rejects(fixed.release(), LockNotHeldError);
    await fixed[Symbol.asyncDispose](); // never throws for a lost hold
  });

  void it('write tokens strictly increase and share the name counter with the plain lock', async () => {
    const name = 'rw-tokens';
    const rw = ctx.holdfast.readWriteLock(name);
    const tokens: number[] = [];
    for (let i = 0; i < 3; i++) {
      const w = await rw.writeLock().acquire();
      tokens.push(w.token);
      await w.release();
      const l = await ctx.holdfast.lock(name).acquire();
      tokens.push(l.token);
      await l.release();
    }
    for (let i = 1; i < tokens.length; i++) assert.ok((tokens[i] as number) > (tokens[i - 1] as number), `tokens ${tokens.join(',')}`);
  });

  void it('close() releases read and write holds', async () => {
    const { holdfast: h2, dispose: d2 } = await ctx.open({ prefix: ctx.holdfast.settings.prefix });
    const r = await h2.readWriteLock('rw-close-r').readLock().acquire();
    const w = await h2.readWriteLock('rw-close-w').writeLock().acquire();
    await d2();
    assert.ok(r.lost && w.lost);
    assert.equal((await ctx.holdfast.readWriteLock('rw-close-r').inspect()).readers, 0);
    assert.equal((await ctx.holdfast.readWriteLock('rw-close-w').inspect()).writer, null);
  });

  void it('rejects bad input before any Redis call', async () => {
    assert.throws(() => ctx.holdfast.readWriteLock(''), RangeError);
    assert.throws(() => ctx.holdfast.readWriteLock(42 as unknown as string), TypeError);
    assert.throws(() => ctx.holdfast.readWriteLock('x', { writerIntent: 0 }), RangeError);
    assert.throws(() => ctx.holdfast.readWriteLock('x', { intent: 5 } as never), TypeError);
    const rw = ctx.holdfast.readWriteLock('rw-bad');
    await assert.rejects(rw.readLock().acquire({ timeout: -1 }), RangeError);
    await assert.rejects(rw.writeLock().acquire({ lease: 1.5 }), RangeError);
    await assert.rejects(rw.writeLock().acquire({ signal: 'x' as never }), TypeError);
    await assert.rejects(rw.readLock().acquire({ leaseMs: 5 } as never), TypeError);
    await assert.rejects(rw.readLock().acquire({ owner: '' }), RangeError);
    await assert.rejects(rw.readLock().withLock('x' as never), TypeError);
    const w = await rw.writeLock().acquire();
    await assert.rejects(w.extend(-5), RangeError);
    await assert.rejects(w.downgrade({ owner: 'x' } as never), TypeError);
    await w.release();
  });
}, { holdfast: { watchdogLease: 1500, watchdogInterval: 300 } });

void describe('ReadWriteLock across processes', () => {
  let holdfast: Holdfast;
  let dispose: () => Promise<void>;
  const prefix = `rwp${Math.random().toString(36).slice(2, 6)}:`;
  let holder: Worker;
  let readers: Worker[];
  before(async () => {
    ({ holdfast, dispose } = await makeHoldfast(serverAdapter, server.url, { prefix }));
    // start every child at once: process start-up is the slow part on a busy machine
    holder = startWorker('rw-hold-read', server.url, prefix, 'rwp-crash', 8000); // outlasts the slowest start-up and the starvation test, which runs first
    readers = [1, 2].map(() => startWorker('rw-readers', server.url, prefix, 'rwp-starve', 3, 3500, 120));
    await Promise.all([holder.next('held'), ...readers.map((w) => w.next('started'))]);
  });
  after(async () => {
    await Promise.all([holder, ...readers].map((w) => w.kill()));
    await dispose();
  });

  void it('a writer is not starved by a stream of overlapping readers in two processes', async () => {
    const rw = holdfast.readWriteLock('rwp-starve');
    // the workers say 'started' just before their first read: wait for one to be in
    const seen = performance.now() + 2000;
    while ((await rw.inspect()).readers === 0 && performance.now() < seen) await sleep(5);
    assert.ok((await rw.inspect()).readers > 0, 'readers are reading');
    const t0 = performance.now();
    const w = await rw.writeLock().acquire({ timeout: 3000 });
    const waited = performance.now() - t0;
    await sleep(50);
    await w.release();
    assert.ok(waited < 1000, `writer waited ${Math.round(waited)} ms behind 120 ms reads`);
    const done = await Promise.all(readers.map((x) => x.next('done', 10_000)));
    assert.ok(done.every((d) => Number(d.reads) > 5), 'readers kept reading before and after the writer');
  });

  void it('frees a kill -9ed reader after its lease', async () => {
    const rw = holdfast.readWriteLock('rwp-crash');
    assert.equal((await rw.inspect()).readers, 1);
    await holder.kill();
    const t0 = performance.now();
    const w = await rw.writeLock().acquire({ timeout: 10_000 });
    const waited = performance.now() - t0;
    // the dead reader's lease (8000 ms from its start) is all that stands in the way
    assert.ok(waited < 8400, `writer waited ${Math.round(waited)} ms for an 8000 ms lease`);
    await w.release();
  });
});

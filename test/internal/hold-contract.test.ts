/**
 * The contract every owner-held primitive shares through the one hold engine, checked on each of them and on both
 * clients: a release that cannot reach Redis never keeps the lock alive, and one wait contract.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { Redis } from 'ioredis';
import {
  AcquireTimeoutError,
  LockLostError,
  LockNotHeldError,
  Redlock,
  ReleaseFailedError,
  type Holdfast,
  type Permit,
} from '../../src/index.js';
import { FaultProxy } from '../support/fault-proxy.js';
import { describeEachAdapter, sleep } from '../support/suite.js';

/** Something held that the engine keeps: a lock, a read or write lock, a permit, an election's leadership. */
interface Holding {
  release(): Promise<void>;
  readonly signal: AbortSignal;
  readonly lost: boolean;
}

interface Kind {
  kind: string;
  /** Takes it (watchdog lease), with a fresh setup for `name`. */
  take: (h: Holdfast, name: string) => Promise<Holding>;
  /** ms left of the hold's lease in Redis, or -1 when it is not held there any more. */
  left: (direct: Redis, h: Holdfast, name: string, held: Holding) => Promise<number>;
}

/** The lease of a key whose TTL is the lease. */
const pttlOf =
  (key: (h: Holdfast, n: string) => string) =>
  async (direct: Redis, h: Holdfast, n: string): Promise<number> => {
    const pttl = await direct.pttl(key(h, n));
    return pttl < 0 ? -1 : pttl;
  };

const kinds: Kind[] = [
  { kind: 'Lock', take: (h, n) => h.lock(n).acquire(), left: pttlOf((h, n) => h.core.keys.lock(n)) },
  { kind: 'FairLock', take: (h, n) => h.fairLock(n).acquire(), left: pttlOf((h, n) => h.core.keys.fairLock(n)) },
  { kind: 'read lock', take: (h, n) => h.readWriteLock(n).readLock().acquire(), left: pttlOf((h, n) => h.core.keys.rwReaders(n)) },
  { kind: 'write lock', take: (h, n) => h.readWriteLock(n).writeLock().acquire(), left: pttlOf((h, n) => h.core.keys.rwWriter(n)) },
  { kind: 'leadership', take: (h, n) => h.election(n).campaign(), left: pttlOf((h, n) => h.core.keys.election(n)) },
  {
    kind: 'permit',
    take: async (h, n) => {
      const sem = h.permitExpirableSemaphore(n);
      await sem.trySetPermits(1);
      return sem.acquire();
    },
    // the permit's expiry is its score in the leases zset (Redis ms); the zset itself has no TTL
    left: async (direct, h, n, held) => {
      const score = await direct.zscore(h.core.keys.permitLeases(n), (held as Permit).id);
      if (score === null) return -1;
      const [s, us] = await direct.time();
      const ms = Number(score) - (Number(s) * 1000 + Math.floor(Number(us) / 1000));
      return ms > 0 ? ms : -1;
    },
  },
];

const LEASE = 1500;

describeEachAdapter('A release that cannot reach Redis', (ctx) => {
  let proxy: FaultProxy;
  let direct: Redis;
  before(async () => {
    proxy = await FaultProxy.start(ctx.server.port);
    direct = new Redis(ctx.server.url);
  });
  after(async () => {
    direct.disconnect();
    await proxy.close();
  });

  for (const { kind, take, left } of kinds) {
    test(`${kind}: renewal stops, the lock frees within its lease, release() rejects with RELEASE_FAILED and retries when called again`, async () => {
      const prefix = `cut${Math.random().toString(36).slice(2, 7)}:`;
      const { holdfast } = await ctx.open({ prefix, watchdogLease: LEASE, watchdogInterval: 300, commandTimeout: 400 }, proxy.url);
      const name = `cut-${kind}`;
      const held = await take(holdfast, name);
      await sleep(400); // a renewal or two: the watchdog is running
      assert.ok((await left(direct, holdfast, name, held)) > 0, 'held in Redis');

      proxy.refuse(true);
      proxy.cut();
      try {
        const error = await held.release().then(
          () => undefined,
          (e: unknown) => e,
        );
        const failedAt = performance.now();
        assert.ok(error instanceof ReleaseFailedError, `rejected with ${String(error)}`);
        assert.equal(error.code, 'RELEASE_FAILED');
        assert.ok(error.freeBy.getTime() <= Date.now() + LEASE + 50, 'freeBy within one lease');
        assert.ok(held.signal.aborted, 'the signal aborted');
        // GLIDE holds commands while it reconnects (up to its requestTimeout) instead of failing them at once, so each
        // of the three tries takes the whole commandTimeout (1.2 s here) and the 1.5 s lease can run out first
        const reasons = ctx.adapter.name === 'glide' ? ['release-failed', 'renewal-failed'] : ['release-failed'];
        assert.ok(reasons.includes((held.signal.reason as LockLostError).reason), String(held.signal.reason));

        // Never renewed again: the TTL only goes down, and the key is gone within the lease.
        let last = Infinity;
        for (;;) {
          const pttl = await left(direct, holdfast, name, held);
          if (pttl < 0) break;
          assert.ok(pttl <= last + 5, `the lease was renewed after the failed release (${last} → ${pttl} ms)`);
          last = pttl;
          assert.ok(performance.now() - failedAt < LEASE + 500, 'still held a lease after the failed release');
          await sleep(40);
        }
        assert.ok(performance.now() - failedAt <= LEASE + 500);
      } finally {
        proxy.heal();
      }
      // Reachable again (once the client has reconnected): a second release() tries again, or finds the background
      // release landed, and resolves.
      while (!(await holdfast.lock('probe').tryAcquire({ lease: 100 }).then(Boolean, () => false))) await sleep(50);
      await held.release();
      assert.equal(await left(direct, holdfast, name, held), -1);
    });
  }

  test('a short cut: the release lands in the background once Redis is back, long before the lease runs out', async () => {
    const prefix = `short${Math.random().toString(36).slice(2, 7)}:`;
    const { holdfast } = await ctx.open({ prefix, watchdogLease: 6000, watchdogInterval: 2000, commandTimeout: 400 }, proxy.url);
    const held = await holdfast.lock('short-cut').acquire();
    const k = holdfast.core.keys.lock('short-cut');
    proxy.refuse(true);
    proxy.cut();
    const released = held.release().then(
      () => 'released',
      (e: unknown) => (e instanceof ReleaseFailedError ? 'failed' : `other: ${String(e)}`),
    );
    await sleep(300);
    const healedAt = performance.now();
    proxy.heal();
    const outcome = await released;
    assert.ok(outcome === 'released' || outcome === 'failed', outcome);
    while ((await direct.exists(k)) === 1) {
      assert.ok(performance.now() - healedAt < 2500, 'not released within 2.5 s of the cut healing (lease 6 s)');
      await sleep(30);
    }
  });
}, { requiresServer: 'cuts the connection with a fault proxy between client and server (no network in one process)' });

describeEachAdapter('One wait contract', (ctx) => {
  /** [name, a blocker that holds it, tryAcquire with options, acquire with options] per primitive. */
  const cases: [string, (h: Holdfast) => Promise<unknown>, (h: Holdfast, o: { timeout: number }) => Promise<unknown>, (h: Holdfast, o: { timeout: number }) => Promise<unknown>][] = [
    ['Lock', (h) => h.lock('w-lock').acquire(), (h, o) => h.lock('w-lock').tryAcquire(o), (h, o) => h.lock('w-lock').acquire(o)],
    ['FairLock', (h) => h.fairLock('w-fair').acquire(), (h, o) => h.fairLock('w-fair').tryAcquire(o), (h, o) => h.fairLock('w-fair').acquire(o)],
    [
      'read lock',
      (h) => h.readWriteLock('w-rw').writeLock().acquire(),
      (h, o) => h.readWriteLock('w-rw').readLock().tryAcquire(o),
      (h, o) => h.readWriteLock('w-rw').readLock().acquire(o),
    ],
    [
      'write lock',
      (h) => h.readWriteLock('w-rw2').readLock().acquire(),
      (h, o) => h.readWriteLock('w-rw2').writeLock().tryAcquire(o),
      (h, o) => h.readWriteLock('w-rw2').writeLock().acquire(o),
    ],
    [
      'Semaphore',
      async (h) => {
        await h.semaphore('w-sem').trySetPermits(1);
        return h.semaphore('w-sem').acquire();
      },
      (h, o) => h.semaphore('w-sem').tryAcquire(1, o),
      (h, o) => h.semaphore('w-sem').acquire(1, o),
    ],
    [
      'PermitExpirableSemaphore',
      async (h) => {
        await h.permitExpirableSemaphore('w-psem').trySetPermits(1);
        return h.permitExpirableSemaphore('w-psem').acquire();
      },
      (h, o) => h.permitExpirableSemaphore('w-psem').tryAcquire(1, o),
      (h, o) => h.permitExpirableSemaphore('w-psem').acquire(1, o),
    ],
    ['MultiLock', (h) => h.lock('w-m2').acquire(), (h, o) => h.multiLock(['w-m1', 'w-m2']).tryAcquire(o), (h, o) => h.multiLock(['w-m1', 'w-m2']).acquire(o)],
  ];

  for (const [kind, block, tryTake, take] of cases) {
    test(`${kind}: tryAcquire({ timeout }) resolves null when the time is up, acquire({ timeout }) rejects, never before the deadline`, async () => {
      const blocker = await ctx.open();
      const waiter = await ctx.open({ prefix: blocker.holdfast.settings.prefix });
      await block(blocker.holdfast);
      let t0 = performance.now();
      assert.equal(await tryTake(waiter.holdfast, { timeout: 150 }), null);
      assert.ok(performance.now() - t0 >= 149, `tryAcquire gave up after ${(performance.now() - t0).toFixed(1)} ms`);
      t0 = performance.now();
      await assert.rejects(take(waiter.holdfast, { timeout: 150 }), AcquireTimeoutError);
      assert.ok(performance.now() - t0 >= 149, `acquire gave up after ${(performance.now() - t0).toFixed(1)} ms`);
      assert.equal(await tryTake(waiter.holdfast, { timeout: 0 }), null, 'a single attempt');
    });
  }

  test('Redlock: acquire({ timeout }) makes its last attempt at the deadline, not before', async (t) => {
    if (!ctx.requireRedis(t, 'Redlock runs on a quorum of independent Redis servers: it has no meaning on one PostgreSQL')) return;
    const a = await ctx.open();
    const b = await ctx.open();
    const one = new Redlock({ redis: [a.redis], prefix: 'rlw:' });
    // retries 1 s apart: within the timeouts below, the only attempt after the first is the one at the deadline
    const two = new Redlock({ redis: [b.redis], prefix: 'rlw:', retryDelay: 1000, retryJitter: 1 });
    try {
      const held = await one.lock('w-redlock').acquire({ lease: 5000 });
      for (const timeout of [50, 120]) {
        const t0 = performance.now();
        await assert.rejects(two.lock('w-redlock').acquire({ timeout }), AcquireTimeoutError);
        assert.ok(performance.now() - t0 >= timeout - 1, `gave up after ${(performance.now() - t0).toFixed(1)} of ${timeout} ms`);
      }
      // the last attempt, at the deadline, gets a lock freed well before it (500 ms of room for a busy machine)
      const t0 = performance.now();
      const waiting = two.lock('w-redlock').acquire({ timeout: 600 });
      setTimeout(() => void held.release(), 100);
      const got = await waiting;
      assert.ok(performance.now() - t0 >= 599, `got it after ${(performance.now() - t0).toFixed(0)} ms: at the deadline, not before`);
      await got.release();
    } finally {
      await one.close();
      await two.close();
    }
  });

  test('a renewal that crosses a release is not a loss: the signal stays quiet', async () => {
    // renewals every 10 ms: many of them are in flight when a release is sent. The lease is long enough (3 s) that a
    // busy machine's event-loop lag never lets it run out for real: any abort here is a renewal misread as a loss.
    const { holdfast } = await ctx.open({ watchdogLease: 3000, watchdogInterval: 10 });
    let aborted = 0;
    for (let i = 0; i < 60; i++) {
      const held = await holdfast.lock(`cross-${i % 3}`).acquire();
      await sleep(5 + (i % 7) * 3);
      await held.release();
      await sleep(12);
      if (held.signal.aborted) aborted++;
    }
    assert.equal(aborted, 0, `${aborted} of 60 released holds reported a loss`);
  });

  test('a lost hold reports LOCK_NOT_HELD on release, whatever Redis still has', async () => {
    const { holdfast } = await ctx.open();
    const held = await holdfast.lock('lost-then-release').acquire({ lease: 100 });
    await new Promise((resolve) => held.signal.addEventListener('abort', resolve, { once: true }));
    await assert.rejects(held.release(), LockNotHeldError);
  });
});

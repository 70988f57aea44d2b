import assert from 'node:assert/strict';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { after, before, describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import {
  AcquireTimeoutError,
  ClientClosedError,
  Holdfast,
  isHoldfastError,
  LockLostError,
  LockNotHeldError,
  RedisConnectionError,
  type RedisTransport,
} from '../../src/index.js';
import { toTransport } from '../../src/holdfast.js';
import { spawnWorker, waitForExit, waitForLine } from '../support/process.js';
import { freePort, RedisServer } from '../support/redis-server.js';
import { FaultProxy } from '../support/fault-proxy.js';
import { describeEachAdapter, sleep } from '../support/suite.js';
import { kvOf } from '../support/kv.js';
import { scripts } from '../../src/lua/scripts.gen.js';
import { Redis } from 'ioredis';
import type pg from 'pg';
import { postgresUrlOf } from '../support/clients.js';

const worker = fileURLToPath(new URL('./fixtures/lock-worker.ts', import.meta.url));

describeEachAdapter('Lock', (ctx) => {
  test('acquire, inspect, release; tokens strictly increase', async () => {
    const { holdfast, dispose } = await ctx.open();
    try {
      const lock = holdfast.lock('basic');
      const first = await lock.acquire();
      assert.equal(first.token, 1);
      assert.equal(first.holdCount, 1);
      const info = await lock.inspect();
      assert.equal(info.owner, first.owner);
      assert.equal(info.holdCount, 1);
      assert.ok(info.remainingTtl !== null && info.remainingTtl > 29_000 && info.remainingTtl <= 30_000);
      assert.equal(await lock.isLocked(), true);
      await first.release();
      assert.equal(await lock.isLocked(), false);
      assert.equal(await lock.remainingTtl(), null);
      const second = await lock.acquire();
      assert.ok(second.token > first.token);
      await second.release();
      await second.release(); // idempotent
      assert.equal((await lock.inspect()).lastToken, second.token);
    } finally {
      await dispose();
    }
  });

  test('await using releases at the end of the scope', async () => {
    const { holdfast, dispose } = await ctx.open();
    try {
      const lock = holdfast.lock('using');
      {
        await using held = await lock.acquire();
        assert.equal(held.released, false);
        assert.equal(await lock.isLocked(), true);
      }
      assert.equal(await lock.isLocked(), false);
    } finally {
      await dispose();
    }
  });

  test('a second owner waits, then gets the lock soon after the release (pub/sub, not the lease)', async () => {
    const { holdfast, dispose } = await ctx.open();
    try {
      const lock = holdfast.lock('handoff');
      const held = await lock.acquire();
      assert.equal(await lock.tryAcquire(), null);
      const started = performance.now();
      const waiting = lock.acquire({ timeout: 10_000 });
      await sleep(200);
      await held.release();
      const next = await waiting;
      const waited = performance.now() - started;
      assert.ok(waited < 2000, `woken by the release message, not the 30 s lease (waited ${waited.toFixed(0)} ms)`);
      assert.ok(next.token > held.token);
      await next.release();
    } finally {
      await dispose();
    }
  });

  test('timeout gives AcquireTimeoutError; abort rejects with the signal reason and leaves no state', async () => {
    const { holdfast, dispose } = await ctx.open();
    try {
      const lock = holdfast.lock('wait');
      const held = await lock.acquire();
      const t0 = performance.now();
      await assert.rejects(lock.acquire({ timeout: 300 }), (e: unknown) => e instanceof AcquireTimeoutError && e.code === 'ACQUIRE_TIMEOUT');
      await assert.rejects(lock.acquire({ timeout: 0 }), AcquireTimeoutError, 'acquire with timeout 0 is one attempt, then a timeout');
      assert.ok(performance.now() - t0 >= 290);
      const controller = new AbortController();
      const waiting = lock.acquire({ signal: controller.signal });
      await sleep(100);
      const reason = new Error('caller gave up');
      controller.abort(reason);
      await assert.rejects(waiting, (e) => e === reason);
      await assert.rejects(lock.acquire({ signal: AbortSignal.abort(reason) }), (e) => e === reason);
      await held.release();
      assert.equal(await lock.isLocked(), false);
    } finally {
      await dispose();
    }
  });

  test('reentrant inside withLock (same async chain); a sibling chain is another owner and waits', async () => {
    const { holdfast, dispose } = await ctx.open();
    try {
      const lock = holdfast.lock('reentrant');
      const order: string[] = [];
      await Promise.all([
        lock.withLock(async ({ token }) => {
          order.push('a:in');
          const inner = await lock.acquire({ timeout: 1000 });
          assert.equal(inner.token, token, 're-entry keeps the token');
          assert.equal(inner.holdCount, 2);
          await holdfast.withLock('reentrant', async (scope) => {
            assert.equal(scope.lock.holdCount, 3);
            assert.equal(await lock.holdCount(), 3);
          });
          await inner.release();
          assert.equal(await lock.holdCount(), 1);
          await sleep(150);
          order.push('a:out');
        }),
        (async () => {
          await sleep(20);
          await lock.withLock(async () => {
            order.push('b:in');
          });
        })(),
      ]);
      assert.deepEqual(order, ['a:in', 'a:out', 'b:in']);
      assert.equal(await lock.isLocked(), false);
    } finally {
      await dispose();
    }
  });

  test('an explicit owner id is reentrant across clients (hand-over between processes)', async () => {
    const a = await ctx.open();
    const b = await ctx.open({ prefix: a.holdfast.settings.prefix });
    try {
      const held = await a.holdfast.lock('handover').acquire({ owner: 'job-7' });
      assert.equal(await b.holdfast.lock('handover').tryAcquire(), null, 'another owner is refused');
      const again = await b.holdfast.lock('handover').acquire({ owner: 'job-7', timeout: 0 });
      assert.equal(again.token, held.token);
      assert.equal(again.holdCount, 2);
      // a's last hold here, but not the owner's last: the release leaves b's hold (the script asks for a marker)
      await held.release();
      const info = await a.holdfast.lock('handover').inspect();
      assert.equal(info.owner, 'job-7');
      assert.equal(info.holdCount, 1, 'one hold released, not the lock');
      assert.equal(again.lost, false);
      await again.release();
      assert.equal(await a.holdfast.lock('handover').isLocked(), false);
    } finally {
      await a.dispose();
      await b.dispose();
    }
  });

  test("release by a non-owner is refused and never deletes the other owner's lock", async () => {
    const { holdfast, dispose } = await ctx.open();
    try {
      const lock = holdfast.lock('nonowner');
      const stale = await lock.acquire({ lease: 150 });
      await sleep(250); // expired
      assert.equal(stale.lost, true);
      const fresh = await lock.acquire();
      await assert.rejects(stale.release(), (e: unknown) => e instanceof LockNotHeldError && e.code === 'LOCK_NOT_HELD');
      const info = await lock.inspect();
      assert.equal(info.owner, fresh.owner, "the new owner's lock is intact");
      // forced take-over: the old holder's release is refused too
      assert.equal(await lock.forceUnlock(), true);
      const third = await lock.acquire();
      await assert.rejects(fresh.release(), LockNotHeldError);
      assert.equal((await lock.inspect()).owner, third.owner);
      await stale[Symbol.asyncDispose](); // never throws for a lost lock
      await third.release();
    } finally {
      await dispose();
    }
  });

  test('explicit lease: no renewal, signal aborts with LockLostError(expired), others get it after', async () => {
    const { holdfast, dispose } = await ctx.open();
    try {
      const lock = holdfast.lock('lease');
      const lost: LockLostError[] = [];
      holdfast.on('lockLost', (e) => lost.push(e));
      // the deadline is counted from when the request was sent: between `before` and `after`
      const lag = monitorEventLoopDelay({ resolution: 10 });
      lag.enable();
      const before = performance.now();
      const held = await lock.acquire({ lease: 300 });
      const after = performance.now();
      await new Promise((resolve) => held.signal.addEventListener('abort', resolve, { once: true }));
      const fired = performance.now();
      lag.disable();
      // due at send + 300 − 5 ms drift allowance: never before it; late by at most the event loop's worst lag (as
      // measured meanwhile) plus one timer turn
      const late = lag.max / 1e6 + 50;
      assert.ok(fired - before >= 295, `the signal fired ${(fired - before).toFixed(0)} ms after the request, before its lease end`);
      assert.ok(fired - after <= 295 + late, `the signal fired ${(fired - after).toFixed(0)} ms after the reply (lease end 295 ms, lag allowance ${late.toFixed(0)} ms)`);
      assert.ok(held.signal.reason instanceof LockLostError);
      assert.equal((held.signal.reason).reason, 'expired');
      assert.equal(lost.length, 1);
      const other = await lock.acquire({ timeout: 1000 });
      assert.ok(other.token > held.token);
      await other.release();
    } finally {
      await dispose();
    }
  });

  test('watchdog keeps the lock past its first lease and stops after release', async () => {
    const { holdfast, dispose } = await ctx.open({ watchdogLease: 800, watchdogInterval: 200 });
    try {
      const lock = holdfast.lock('watchdog');
      const held = await lock.acquire();
      await sleep(2000); // two and a half leases
      assert.equal(held.signal.aborted, false);
      const ttl = await lock.remainingTtl();
      assert.ok(ttl !== null && ttl > 300, `renewed (ttl ${ttl})`);
      await held.release();
      await sleep(500);
      assert.equal(await lock.isLocked(), false, 'no renewal resurrects a released lock');
      assert.equal(held.signal.aborted, false, 'a release is not a loss');
    } finally {
      await dispose();
    }
  });

  test('loss signal fires when Redis is paused past the lease', async (t) => {
    if (!ctx.requireServer(t, 'pauses the redis-server process (SIGSTOP)')) return;
    const own = await RedisServer.start();
    const { holdfast, dispose } = await ctx.open({ watchdogLease: 1000, watchdogInterval: 250, commandTimeout: 200 }, own.url);
    try {
      const held = await holdfast.lock('paused').acquire();
      const t0 = performance.now();
      own.pause();
      await new Promise((resolve) => held.signal.addEventListener('abort', resolve, { once: true }));
      const at = performance.now() - t0;
      own.resume();
      // renewals fail from the pause on; the signal is due when the last confirmed lease (≤ 1000 ms) would end.
      // The slack is for timer lateness on a loaded test machine.
      assert.ok(at < 1250, `aborted by the end of the lease (${at.toFixed(0)} ms)`);
      assert.ok(at > 500, `not before renewals had a chance (${at.toFixed(0)} ms)`);
      assert.equal((held.signal.reason as LockLostError).code, 'LOCK_LOST');
    } finally {
      own.resume();
      await dispose();
      await own.stop();
    }
  });

  test('NOSCRIPT: SCRIPT FLUSH and a server restart are survived', async (t) => {
    if (!ctx.requireServer(t, 'restarts a redis-server process')) return;
    const own = await RedisServer.start();
    const { holdfast, redis, dispose } = await ctx.open({ commandTimeout: 1000 }, own.url);
    try {
      const lock = holdfast.lock('noscript');
      await (await lock.acquire()).release();
      await holdfast.core.command(['SCRIPT', 'FLUSH']);
      await (await lock.acquire()).release();
      await own.restart();
      // the client reconnects on its own; give it a moment
      for (let i = 0; ; i++) {
        try {
          await (await lock.acquire({ timeout: 0 })).release();
          break;
        } catch (error) {
          if (!(error instanceof RedisConnectionError) || i > 50) throw error;
          await sleep(100);
        }
      }
      void redis;
    } finally {
      await dispose();
      await own.stop();
    }
  });

  test('Redis down: a typed connection error within commandTimeout, not a hang', async (t) => {
    if (!ctx.requireServer(t, 'the server is down and the client cannot connect: an in-process store has no connection to lose')) return;
    const dead = await freePort();
    const client =
      ctx.adapter.name === 'ioredis'
        ? new (await import('ioredis')).Redis(dead, '127.0.0.1', { lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => 50 }).on('error', () => {})
        : ctx.adapter.name === 'glide'
          ? await (await import('@valkey/valkey-glide')).GlideClient.createClient({ addresses: [{ host: '127.0.0.1', port: dead }], lazyConnect: true })
          : (await import('redis')).createClient({ url: `redis://127.0.0.1:${dead}` }).on('error', () => {});
    const holdfast = new Holdfast({ redis: client, commandTimeout: 300 });
    const t0 = performance.now();
    await assert.rejects(holdfast.lock('down').acquire({ timeout: 5000 }), (e: unknown) => isHoldfastError(e) && e.code === 'REDIS_CONNECTION');
    assert.ok(performance.now() - t0 < 2000);
    try {
      const c = client as unknown as { disconnect?(): unknown; close?(): unknown };
      await (c.disconnect ? c.disconnect() : c.close?.());
    } catch {
      /* never connected */
    }
    await holdfast.close();
  });

  test('a release whose reply was lost is retried and reports the first result', async () => {
    const { redis, dispose } = await ctx.open();
    let dropNextRelease = 0;
    let holdfastOptions: ConstructorParameters<typeof Holdfast>[0];
    if (ctx.adapter.postgres) {
      // the pool runs the statement, then reports the connection lost
      const pool = redis as pg.Pool;
      const query = async (text: string, values?: unknown[]): Promise<unknown> => {
        const reply = await pool.query(text, values);
        if (dropNextRelease > 0 && text.includes('lock_release') && JSON.stringify(values?.[0]).includes(':rel:')) {
          dropNextRelease--;
          throw new Error('Connection terminated unexpectedly');
        }
        return reply;
      };
      const flakyPool = new Proxy(pool, { get: (target, key) => (key === 'query' ? query : Reflect.get(target, key)) });
      holdfastOptions = { postgres: flakyPool, schema: postgresUrlOf(ctx.urls[0]!).schema, prefix: `flaky${ctx.adapter.name}:` };
    } else {
      const base = toTransport(redis);
      const flaky: RedisTransport = {
        ...base,
        kind: 'flaky',
        async evalsha(sha, keys, args) {
          const reply = await base.evalsha(sha, keys, args);
          if (dropNextRelease > 0 && keys[1]?.includes(':rel:')) {
            dropNextRelease--;
            throw new Error('Connection is closed.'); // the script ran, the reply never arrived
          }
          return reply;
        },
      };
      holdfastOptions = { redis: flaky, prefix: `flaky${ctx.adapter.name}:` };
    }
    const holdfast = new Holdfast(holdfastOptions);
    try {
      const lock = holdfast.lock('retry');
      const outer = await lock.acquire({ owner: 'retry-owner' });
      const inner = await lock.acquire({ owner: 'retry-owner' });
      dropNextRelease = 1;
      await inner.release(); // ran once in Redis; the retry must not decrement again
      assert.equal(await lock.holdCount(), 1);
      dropNextRelease = 1;
      await outer.release(); // the retry sees the marker: released, not "not held"
      assert.equal(await lock.isLocked(), false);
    } finally {
      await holdfast.close();
      await dispose();
    }
  });

  test('close() releases held locks, fails waiters, and ends signals', async () => {
    const a = await ctx.open();
    const b = await ctx.open({ prefix: a.holdfast.settings.prefix });
    try {
      const held = await a.holdfast.lock('close').acquire();
      const other = await b.holdfast.lock('close2').acquire();
      const waiter = assert.rejects(a.holdfast.lock('close2').acquire(), ClientClosedError); // waits: b holds close2
      await sleep(100);
      await a.holdfast.close();
      await waiter;
      assert.equal(held.signal.aborted, true);
      assert.equal(await b.holdfast.lock('close').isLocked(), false, 'close released it');
      await assert.rejects(a.holdfast.lock('close').acquire(), ClientClosedError);
      await other.release();
    } finally {
      await a.dispose();
      await b.dispose();
    }
  });

  test('mutual exclusion across 4 OS processes: a GET/SET counter ends exact (and is not exact without the lock)', async (t) => {
    if (ctx.adapter.inProcess && !ctx.requireServer(t, 'four OS processes share one server: an in-process store is not reachable from another process')) return;
    const prefix = `mx${ctx.adapter.name}:`;
    const run = async (mode: 'lock' | 'none', iterations: number): Promise<number> => {
      const p = `${prefix}${mode}:`;
      // all four start together once each has loaded and connected (a barrier in Redis, not a guessed start time)
      const workers = Array.from({ length: 4 }, () => spawnWorker(worker, ['counter', ctx.adapter.name, ctx.urls[0]!, p, String(iterations), mode, '4']));
      const codes = await Promise.all(workers.map((w) => waitForExit(w, 60_000)));
      assert.deepEqual(codes, [0, 0, 0, 0]);
      const { holdfast, redis, dispose } = await ctx.open();
      try {
        return Number(await kvOf(ctx.adapter, holdfast, redis, ctx.urls[0]!).get(`${p}counter`));
      } finally {
        await dispose();
      }
    };
    assert.equal(await run('lock', 50), 200);
    const unlocked = await run('none', 50);
    assert.ok(unlocked < 200, `without a lock updates are lost (${unlocked}/200)`);
  });

  test('a kill -9 of the holder frees the lock within its lease', async (t) => {
    if (ctx.adapter.inProcess && !ctx.requireServer(t, 'the holder is another OS process, killed')) return;
    const prefix = `kill${ctx.adapter.name}:`;
    const child = spawnWorker(worker, ['hold', ctx.adapter.name, ctx.urls[0]!, prefix, 'crash', 'watchdog']);
    await waitForLine(child, /^held /);
    child.kill('SIGKILL');
    const { holdfast, dispose } = await ctx.open({ prefix });
    try {
      const lock = holdfast.lock('crash');
      assert.equal(await lock.isLocked(), true);
      const t0 = performance.now();
      const held = await lock.acquire({ timeout: 5000 });
      const waited = performance.now() - t0;
      assert.ok(waited <= 1200, `freed within the 1 s watchdog lease (${waited.toFixed(0)} ms)`);
      await held.release();
    } finally {
      await dispose();
    }
  });

  test('no timer keeps the process alive: a process that holds a lock and returns exits', async (t) => {
    if (ctx.adapter.inProcess && !ctx.requireServer(t, 'the holder is a child OS process connected by URL')) return;
    const child = spawnWorker(worker, ['exit', ctx.adapter.name, ctx.urls[0]!, `exit${ctx.adapter.name}:`, 'x']);
    assert.equal(await waitForExit(child, 10_000), 0);
  });

  test('a process exits after close(), a waiter and its wake-up connection included', async (t) => {
    if (ctx.adapter.inProcess && !ctx.requireServer(t, 'the holder is a child OS process connected by URL')) return;
    const child = spawnWorker(worker, ['close', ctx.adapter.name, ctx.urls[0]!, `close${ctx.adapter.name}:`, 'x']);
    const line = waitForLine(child, /^waiter /);
    assert.equal(await waitForExit(child, 10_000), 0);
    assert.match(await line, /waiter closed/);
  });
});

describe('Lock: bad input is rejected before any Redis call', () => {
  // A transport that fails the test if anything reaches it.
  const untouchable: RedisTransport = {
    kind: 'untouchable',
    evalsha: () => Promise.reject(new Error('Redis must not be called')),
    eval: () => Promise.reject(new Error('Redis must not be called')),
    command: () => Promise.reject(new Error('Redis must not be called')),
    createSubscriber: () => Promise.reject(new Error('Redis must not be called')),
  };
  const holdfast = new Holdfast({ redis: untouchable });
  const lock = holdfast.lock('ok');

  test('names', () => {
    for (const bad of [undefined, null, 42, {}, ['a']]) assert.throws(() => holdfast.lock(bad as string), TypeError);
    assert.throws(() => holdfast.lock(''), RangeError);
    assert.throws(() => holdfast.lock('x'.repeat(1025)), /at most 1024 bytes/);
    assert.throws(() => holdfast.lock('é'.repeat(600)), RangeError, 'bytes, not characters');
  });

  test('durations and options', async () => {
    const bad: [unknown, ErrorConstructor][] = [
      [{ timeout: -1 }, RangeError],
      [{ timeout: 1.5 }, RangeError],
      [{ timeout: NaN }, RangeError],
      [{ timeout: Infinity }, RangeError],
      [{ timeout: '100' }, TypeError],
      [{ lease: 0 }, RangeError],
      [{ lease: 2 ** 40 }, RangeError],
      [{ lease: null }, TypeError],
      [{ signal: 'yes' }, TypeError],
      [{ owner: '' }, RangeError],
      [{ owner: 7 }, TypeError],
      [{ leaseMs: 100 }, TypeError],
      ['fast', TypeError],
      [[], TypeError],
    ];
    for (const [options, kind] of bad) {
      await assert.rejects(lock.acquire(options as never), kind, JSON.stringify(options));
      await assert.rejects(lock.tryAcquire(options as never), kind, JSON.stringify(options));
    }
    await assert.rejects(lock.withLock('not a function' as never), TypeError);
  });

  test('client options', () => {
    assert.throws(() => new Holdfast(undefined as never), TypeError);
    assert.throws(() => new Holdfast({ redis: {} }), /ioredis client, a node-redis client, a Valkey GLIDE client or a RedisTransport/);
    assert.throws(() => new Holdfast({ redis: untouchable, watchdogLease: 1000, watchdogInterval: 1000 }), RangeError);
    assert.throws(() => new Holdfast({ redis: untouchable, commandTimeout: 0 }), RangeError);
    assert.throws(() => new Holdfast({ redis: untouchable, prefix: 5 as never }), TypeError);
    assert.throws(() => new Holdfast({ redis: untouchable, watchdogLeas: 5 } as never), /not a known option/);
  });

  test('errors carry stable codes and names', () => {
    const error = new LockNotHeldError('x');
    assert.equal(error.name, 'LockNotHeldError');
    assert.equal(error.code, 'LOCK_NOT_HELD');
    assert.ok(isHoldfastError(error));
    assert.equal(new AcquireTimeoutError('x', 5).code, 'ACQUIRE_TIMEOUT');
    assert.equal(new LockLostError('x', 'expired').code, 'LOCK_LOST');
    assert.equal(new RedisConnectionError('x', { cause: error }).cause, error);
  });
});

// ioredis resends the commands that were in flight when its connection dropped (`autoResendUnfulfilledCommands`),
// so one acquire or release can run twice in Redis. Neither may turn into a spurious "not held" or a leaked hold.
describe('Lock under a client that resends after a reconnect (ioredis)', () => {
  let server: RedisServer;
  let proxy: FaultProxy;
  before(async () => {
    server = await RedisServer.start();
    proxy = await FaultProxy.start(server.port);
  });
  after(async () => {
    await proxy.close();
    await server.stop();
  });

  async function viaProxy(prefix: string): Promise<{ holdfast: Holdfast; direct: Holdfast; close: () => Promise<void> }> {
    const resending = new Redis(proxy.url, { maxRetriesPerRequest: 1 });
    resending.on('error', () => {});
    const plain = new Redis(server.url);
    const holdfast = new Holdfast({ redis: resending, prefix });
    const direct = new Holdfast({ redis: plain, prefix });
    return {
      holdfast,
      direct,
      close: async () => {
        await holdfast.close();
        await direct.close();
        resending.disconnect();
        plain.disconnect();
      },
    };
  }

  test('a release that ran, lost its reply and was resent after another owner took the lock still succeeds', async () => {
    const { holdfast, direct, close } = await viaProxy('resend-rel:');
    try {
      await (await holdfast.lock('warm').acquire()).release(); // both scripts loaded: the cut release runs, not NOSCRIPT
      const held = await holdfast.lock('r').acquire();
      const waiting = direct.lock('r').acquire({ timeout: 5000 }); // takes the lock the moment the release ran
      await sleep(50);
      proxy.cutAfter(scripts['lock/release'].sha, 1, { afterReply: true });
      await held.release(); // the resent copy finds the waiter's lock: -1, read as our own earlier run
      const next = await waiting;
      assert.equal(held.lost, false);
      assert.equal((await direct.lock('r').inspect()).owner, next.owner, "the waiter's lock was not touched");
      await next.release();
      assert.ok(proxy.cuts >= 1, 'the connection was cut');
    } finally {
      proxy.heal();
      await close();
    }
  });

  test('an owner id also held by another client: a release here gives up one hold, once, also when its reply is lost', async () => {
    const { holdfast, direct, close } = await viaProxy('resend-partial:');
    try {
      await (await holdfast.lock('warm').acquire()).release();
      const there = await direct.lock('p').acquire({ owner: 'shared-owner' });
      const here = await holdfast.lock('p').acquire({ owner: 'shared-owner' });
      assert.equal((await direct.lock('p').inspect()).holdCount, 2);
      const cutsBefore = proxy.cuts;
      // the release goes first without a marker, is told holds would remain, and is sent again with one: cut that one
      proxy.cutAfter(':rel:', 1, { afterReply: true });
      await here.release();
      assert.ok(proxy.cuts > cutsBefore, 'the connection was cut');
      const info = await direct.lock('p').inspect();
      assert.equal(info.owner, 'shared-owner');
      assert.equal(info.holdCount, 1, 'released once, not twice');
      assert.equal(there.lost, false);
      await there.release();
      assert.equal(await direct.lock('p').isLocked(), false);
    } finally {
      proxy.heal();
      await close();
    }
  });

  test('the same for the write lock: a resent partial release gives up one hold, not two (the shared release marker check)', async () => {
    const { holdfast, direct, close } = await viaProxy('resend-partial-w:');
    try {
      await (await holdfast.readWriteLock('warm').writeLock().acquire()).release();
      const there = await direct.readWriteLock('w').writeLock().acquire({ owner: 'shared-writer' });
      const here = await holdfast.readWriteLock('w').writeLock().acquire({ owner: 'shared-writer' });
      const cutsBefore = proxy.cuts;
      proxy.cutAfter(':rel:', 1, { afterReply: true });
      await here.release();
      assert.ok(proxy.cuts > cutsBefore, 'the connection was cut');
      assert.equal(await direct.readWriteLock('w').writeLock().holdCount({ owner: 'shared-writer' }), 1, 'released once, not twice');
      assert.equal(there.lost, false);
      await there.release();
      assert.equal(await direct.readWriteLock('w').writeLock().isHeld({ owner: 'shared-writer' }), false);
    } finally {
      proxy.heal();
      await close();
    }
  });

  test('an acquire that ran, lost its reply and was resent reports the acquisition, not a busy lock', async () => {
    const { holdfast, direct, close } = await viaProxy('resend-acq:');
    try {
      await (await holdfast.lock('warm').acquire()).release();
      const cutsBefore = proxy.cuts;
      proxy.cutAfter(scripts['lock/acquire'].sha, 1, { afterReply: true });
      const t0 = performance.now();
      const held = await holdfast.lock('a').acquire({ timeout: 5000 });
      assert.ok(performance.now() - t0 < 2000, 'not left waiting for its own lease to run out');
      assert.ok(proxy.cuts > cutsBefore, 'the connection was cut');
      const info = await direct.lock('a').inspect();
      assert.equal(info.owner, held.owner);
      assert.equal(info.holdCount, 1, 'the resent copy did not count a second hold');
      await held.release();
      assert.equal(await direct.lock('a').isLocked(), false);
    } finally {
      proxy.heal();
      await close();
    }
  });
});

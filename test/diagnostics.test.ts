/**
 * The diagnostics channels (src/diagnostics.ts): every primitive's acquire and release appear on the tracing
 * channels with kind, name, fingerprint, attempts, wait and outcome; a lost hold appears on `holdfast:lost`;
 * renewals on `holdfast:renew`; a fair-lock hand-off on `holdfast:handoff`. No payload carries an owner id.
 */
import assert from 'node:assert/strict';
import { AsyncLocalStorage } from 'node:async_hooks';
import dc from 'node:diagnostics_channel';
import { after, before, beforeEach, it } from 'node:test';
import {
  AcquireTimeoutError,
  CHANNELS,
  fingerprint,
  LockLostError,
  LockNotHeldError,
  Redlock,
  type AcquireContext,
  type HandoffMessage,
  type LostMessage,
  type ReleaseContext,
  type RenewMessage,
} from '../src/index.js';
import { describeEachAdapter, sleep } from './support/suite.js';

/** Everything published while a test runs. */
interface Seen {
  acquireStart: AcquireContext[];
  acquired: AcquireContext[];
  acquireErrors: AcquireContext[];
  releaseStart: ReleaseContext[];
  released: ReleaseContext[];
  lost: LostMessage[];
  renew: RenewMessage[];
  handoff: HandoffMessage[];
}

const seen: Seen = { acquireStart: [], acquired: [], acquireErrors: [], releaseStart: [], released: [], lost: [], renew: [], handoff: [] };
const reset = (): void => {
  for (const list of Object.values(seen) as unknown[][]) list.length = 0;
};

const ignore = (): void => {};
const acquireHandlers = {
  start: (ctx: AcquireContext) => void seen.acquireStart.push({ ...ctx }),
  end: ignore,
  asyncStart: ignore,
  asyncEnd: (ctx: AcquireContext) => void seen.acquired.push(ctx),
  error: (ctx: AcquireContext) => void seen.acquireErrors.push(ctx),
};
const releaseHandlers = {
  start: (ctx: ReleaseContext) => void seen.releaseStart.push({ ...ctx }),
  end: ignore,
  asyncStart: ignore,
  asyncEnd: (ctx: ReleaseContext) => void seen.released.push(ctx),
  error: ignore,
};
const onLost = (m: unknown): void => void seen.lost.push(m as LostMessage);
const onRenew = (m: unknown): void => void seen.renew.push(m as RenewMessage);
const onHandoff = (m: unknown): void => void seen.handoff.push(m as HandoffMessage);

before(() => {
  dc.tracingChannel<unknown, AcquireContext>(CHANNELS.acquire).subscribe(acquireHandlers);
  dc.tracingChannel<unknown, ReleaseContext>(CHANNELS.release).subscribe(releaseHandlers);
  dc.subscribe(CHANNELS.lost, onLost);
  dc.subscribe(CHANNELS.renew, onRenew);
  dc.subscribe(CHANNELS.handoff, onHandoff);
});
after(() => {
  dc.tracingChannel<unknown, AcquireContext>(CHANNELS.acquire).unsubscribe(acquireHandlers);
  dc.tracingChannel<unknown, ReleaseContext>(CHANNELS.release).unsubscribe(releaseHandlers);
  dc.unsubscribe(CHANNELS.lost, onLost);
  dc.unsubscribe(CHANNELS.renew, onRenew);
  dc.unsubscribe(CHANNELS.handoff, onHandoff);
});

/** The one finished acquisition of `kind` (fails when there are none or several). */
function oneAcquired(kind: string, name: string): AcquireContext {
  const found = seen.acquired.filter((c) => c.kind === kind && c.name === name);
  assert.equal(found.length, 1, `one ${kind} acquisition of ${name}, got ${JSON.stringify(seen.acquired)}`);
  return found[0]!;
}
function oneReleased(kind: string, name: string): ReleaseContext {
  const found = seen.released.filter((c) => c.kind === kind && c.name === name);
  assert.equal(found.length, 1, `one ${kind} release of ${name}, got ${JSON.stringify(seen.released)}`);
  return found[0]!;
}

/** No owner id (or permit id) may appear in any payload. */
function assertNoSecret(...secrets: string[]): void {
  const text = JSON.stringify(seen, (_k, v: unknown) => (v instanceof Error ? v.message : v));
  for (const secret of secrets) assert.ok(!text.includes(secret), `a payload carries the owner id ${secret}`);
}

describeEachAdapter('diagnostics channels', (ctx) => {
  beforeEach(reset);

  void it('a lock: acquire and release traced with kind, name, fingerprint, attempts, wait, token; contention as timed-out', async () => {
    const lock = ctx.holdfast.lock('dc:lock');
    const held = await lock.acquire();
    const a = oneAcquired('lock', 'dc:lock');
    assert.equal(a.outcome, 'acquired');
    assert.equal(a.fingerprint, fingerprint(held.owner));
    assert.match(a.fingerprint, /^[0-9a-f]{12}$/);
    assert.equal(a.token, held.token);
    assert.ok(held.token > 0);
    assert.equal(a.holdCount, 1);
    assert.equal(a.attempts, 1);
    assert.ok(a.waitedMs >= 0 && a.waitedMs < 10_000, String(a.waitedMs));
    assert.equal(seen.acquireStart.length, 1);
    assert.equal(seen.acquireStart[0]!.outcome, undefined, 'the outcome is set at the end, not at the start');

    // contention: a single attempt that finds it held, then a wait that times out
    assert.equal(await lock.tryAcquire(), null);
    await assert.rejects(lock.acquire({ timeout: 150 }), AcquireTimeoutError);
    const busy = seen.acquired.filter((c) => c.outcome === 'timed-out');
    assert.equal(busy.length, 2, JSON.stringify(seen.acquired));
    assert.equal(busy[0]!.attempts, 1);
    assert.ok(busy[1]!.attempts >= 2, `a wait makes more than one attempt, got ${busy[1]!.attempts}`);
    assert.ok(busy[1]!.waitedMs >= 140, String(busy[1]!.waitedMs));
    assert.equal(seen.acquireErrors.length, 1, 'the acquire() that timed out threw');

    await held.release();
    await held.release(); // idempotent: traced once
    const r = oneReleased('lock', 'dc:lock');
    assert.equal(r.id, a.id);
    assert.equal(r.outcome, 'released');
    assert.equal(r.fingerprint, a.fingerprint);
    assert.equal(r.token, held.token);
    assert.ok(r.heldMs !== undefined && r.heldMs >= 150, String(r.heldMs));
    assertNoSecret(held.owner);
  });

  void it('an aborted wait is "aborted"', async () => {
    const lock = ctx.holdfast.lock('dc:abort');
    await using _held = await lock.acquire();
    const controller = new AbortController();
    setTimeout(() => controller.abort(new Error('stop')), 100);
    await assert.rejects(lock.acquire({ signal: controller.signal }), /stop/);
    const aborted = seen.acquired.filter((c) => c.outcome === 'aborted');
    assert.equal(aborted.length, 1, JSON.stringify(seen.acquired));
    assert.equal(aborted[0]!.kind, 'lock');
  });

  void it('fair lock, read lock, write lock, semaphore, permit semaphore and multi-lock: each acquire and release traced', async () => {
    const h = ctx.holdfast;
    const fair = await h.fairLock('dc:fair').acquire();
    const rw = h.readWriteLock('dc:rw');
    const read = await rw.readLock().acquire();
    await read.release();
    const write = await rw.writeLock().acquire();
    const sem = h.semaphore('dc:sem');
    await sem.trySetPermits(3);
    const permits = await sem.acquire(2);
    const psem = h.permitExpirableSemaphore('dc:psem');
    await psem.trySetPermits(2);
    const permit = await psem.acquire(1);
    const multi = await h.multiLock(['dc:m1', 'dc:m2']).acquire();
    for (const held of [fair, write, permits, permit, multi]) await held.release();

    const cases: [string, string, number | undefined][] = [
      ['fair-lock', 'dc:fair', fair.token],
      ['read-lock', 'dc:rw', 0],
      ['write-lock', 'dc:rw', write.token],
      ['semaphore', 'dc:sem', undefined],
      ['permit-semaphore', 'dc:psem', 0],
      ['multi-lock', 'dc:m1+dc:m2', undefined],
      ['lock', 'dc:m1', multi.tokens.get('dc:m1')],
      ['lock', 'dc:m2', multi.tokens.get('dc:m2')],
    ];
    for (const [kind, name, token] of cases) {
      const a = oneAcquired(kind, name);
      assert.equal(a.outcome, 'acquired', kind);
      assert.equal(a.token, token, kind);
      assert.ok(a.attempts >= 1, kind);
      const r = oneReleased(kind, name);
      assert.equal(r.id, a.id, kind);
      assert.equal(r.outcome, 'released', kind);
    }
    assert.equal(oneAcquired('semaphore', 'dc:sem').permits, 2);
    assert.equal(oneAcquired('permit-semaphore', 'dc:psem').permits, 1);
    assert.equal(oneAcquired('permit-semaphore', 'dc:psem').fingerprint, fingerprint(permit.id));
    assert.equal(oneAcquired('write-lock', 'dc:rw').fingerprint, fingerprint(write.owner));
    assert.ok(write.token > 0 && fair.token > 0);
    assertNoSecret(fair.owner, read.owner, write.owner, permit.id);
  });

  void it('Redlock: acquire and release traced', async (t) => {
    if (!ctx.requireRedis(t, 'Redlock runs on a quorum of independent Redis servers: it has no meaning on one PostgreSQL')) return;
    const node = await ctx.open();
    const redlock = new Redlock({ redis: [node.redis], prefix: `rl${Math.random().toString(36).slice(2, 8)}:` });
    try {
      const held = await redlock.lock('dc:redlock').acquire({ lease: 5000 });
      await held.release();
      const a = oneAcquired('redlock', 'dc:redlock');
      assert.equal(a.outcome, 'acquired');
      assert.equal(a.attempts, 1);
      assert.equal(a.token, held.token);
      assert.equal(a.fingerprint, fingerprint(held.owner));
      assert.equal(oneReleased('redlock', 'dc:redlock').id, a.id);
      assertNoSecret(held.owner);
    } finally {
      await redlock.close();
    }
  });

  void it('a lost lock appears on holdfast:lost; its release then is "not-held"', async () => {
    const held = await ctx.holdfast.lock('dc:lost').acquire({ lease: 200 });
    await sleep(400);
    assert.ok(held.lost);
    assert.equal(seen.lost.length, 1, JSON.stringify(seen.lost));
    const m = seen.lost[0]!;
    assert.equal(m.kind, 'lock');
    assert.equal(m.name, 'dc:lost');
    assert.equal(m.reason, 'expired');
    assert.ok(m.error instanceof LockLostError);
    assert.equal(m.fingerprint, fingerprint(held.owner));
    assert.equal(m.token, held.token);
    await assert.rejects(held.release());
    assert.equal(oneReleased('lock', 'dc:lost').outcome, 'not-held');
    assertNoSecret(held.owner);
  });

  void it('watchdog renewals and extend() appear on holdfast:renew; a renewal that finds the lock gone is "not-held" and the loss follows', async () => {
    const { holdfast } = await ctx.open({ watchdogLease: 600, watchdogInterval: 100 });
    const held = await holdfast.lock('dc:renew').acquire();
    await sleep(350);
    const watchdog = seen.renew.filter((m) => m.source === 'watchdog' && m.name === 'dc:renew');
    assert.ok(watchdog.length >= 2, `watchdog renewals: ${JSON.stringify(seen.renew)}`);
    assert.ok(watchdog.every((m) => m.result === 'renewed' && m.leaseMs === 600 && m.token === held.token && m.kind === 'lock'));
    assert.equal(watchdog[0]!.fingerprint, fingerprint(held.owner));
    await held.extend(5000);
    assert.deepEqual(
      seen.renew.filter((m) => m.source === 'extend').map((m) => [m.result, m.leaseMs]),
      [['renewed', 5000]],
    );
    // someone deletes it: the next renewal says so, and the hold is lost as taken over
    assert.equal(await holdfast.lock('dc:renew').forceUnlock(), true);
    await sleep(300);
    assert.ok(seen.renew.some((m) => m.result === 'not-held'), JSON.stringify(seen.renew));
    assert.deepEqual(seen.lost.map((m) => [m.name, m.reason]), [['dc:renew', 'taken-over']]);
    assertNoSecret(held.owner);
  });

  void it('a fair-lock hand-off appears on holdfast:handoff: granted, then claimed', async () => {
    const fair = ctx.holdfast.fairLock('dc:handoff');
    const first = await fair.acquire();
    const waiting = fair.acquire({ timeout: 10_000 });
    await sleep(150); // queued
    await first.release();
    const second = await waiting;
    await sleep(100); // the claim runs in the background
    assert.deepEqual(
      seen.handoff.map((m) => [m.stage, m.name, m.token, m.fingerprint]),
      [
        ['granted', 'dc:handoff', second.token, fingerprint(second.owner)],
        ['claimed', 'dc:handoff', second.token, fingerprint(second.owner)],
      ],
    );
    await second.release();
    assertNoSecret(first.owner, second.owner);
  });

  void it('the tracing events follow tracePromise: end, then error, asyncStart, asyncEnd on one context, with or without a start subscriber', async () => {
    /** Every event but `start`, as `channel:event outcome error #n` (n: the context's number, in order of first sight). */
    const log: string[] = [];
    const numbers = new Map<object, number>();
    const entry = (channel: string, event: string) => (c: AcquireContext | ReleaseContext) => {
      if (!numbers.has(c)) numbers.set(c, numbers.size);
      const error = c.error === undefined ? '' : (c.error as Error).constructor.name;
      log.push(`${channel}:${event} ${String(c.outcome)} ${error} #${numbers.get(c)}`);
    };
    const handlersOf = (channel: string) => ({
      start: ignore,
      end: entry(channel, 'end'),
      asyncStart: entry(channel, 'asyncStart'),
      asyncEnd: entry(channel, 'asyncEnd'),
      error: entry(channel, 'error'),
    });
    const loggers = { acquire: handlersOf('acquire'), release: handlersOf('release') };
    const { start: _a, ...acquireNoStart } = loggers.acquire;
    const { start: _r, ...releaseNoStart } = loggers.release;
    const acquire = dc.tracingChannel<unknown, AcquireContext>(CHANNELS.acquire);
    const release = dc.tracingChannel<unknown, ReleaseContext>(CHANNELS.release);
    const scenario = async (name: string): Promise<string[]> => {
      log.length = 0;
      numbers.clear();
      const lock = ctx.holdfast.lock(name);
      const held = await lock.acquire();
      assert.equal(await lock.tryAcquire(), null);
      await assert.rejects(lock.acquire({ timeout: 60 }), AcquireTimeoutError);
      await held.release();
      const short = await lock.acquire({ lease: 100 });
      await sleep(250);
      await assert.rejects(short.release(), LockNotHeldError);
      return [...log];
    };

    // the file's own handlers listen to `start`: off for the first run
    acquire.unsubscribe(acquireHandlers);
    release.unsubscribe(releaseHandlers);
    let direct: string[];
    try {
      acquire.subscribe(acquireNoStart as typeof loggers.acquire);
      release.subscribe(releaseNoStart as typeof loggers.release);
      assert.equal(acquire.start.hasSubscribers, false);
      direct = await scenario('dc:direct');
    } finally {
      acquire.unsubscribe(acquireNoStart as typeof loggers.acquire);
      release.unsubscribe(releaseNoStart as typeof loggers.release);
      acquire.subscribe(acquireHandlers);
      release.subscribe(releaseHandlers);
    }
    acquire.subscribe(loggers.acquire);
    release.subscribe(loggers.release);
    let traced: string[];
    try {
      assert.equal(acquire.start.hasSubscribers, true);
      traced = await scenario('dc:traced');
    } finally {
      acquire.unsubscribe(loggers.acquire);
      release.unsubscribe(loggers.release);
    }
    assert.deepEqual(direct, traced);
    assert.deepEqual(direct, [
      'acquire:end undefined  #0',
      'acquire:asyncStart acquired  #0',
      'acquire:asyncEnd acquired  #0',
      'acquire:end undefined  #1',
      'acquire:asyncStart timed-out  #1',
      'acquire:asyncEnd timed-out  #1',
      'acquire:end undefined  #2',
      'acquire:error timed-out AcquireTimeoutError #2',
      'acquire:asyncStart timed-out AcquireTimeoutError #2',
      'acquire:asyncEnd timed-out AcquireTimeoutError #2',
      'release:end undefined  #3',
      'release:asyncStart released  #3',
      'release:asyncEnd released  #3',
      'acquire:end undefined  #4',
      'acquire:asyncStart acquired  #4',
      'acquire:asyncEnd acquired  #4',
      'release:end undefined  #5',
      'release:error not-held LockNotHeldError #5',
      'release:asyncStart not-held LockNotHeldError #5',
      'release:asyncEnd not-held LockNotHeldError #5',
    ]);
  });

  void it('a store bound to the start channel is entered for the call and its async events, not for the caller', async () => {
    const store = new AsyncLocalStorage<string>();
    const acquire = dc.tracingChannel<unknown, AcquireContext>(CHANNELS.acquire);
    const release = dc.tracingChannel<unknown, ReleaseContext>(CHANNELS.release);
    const storeAt: string[] = [];
    const handlers = {
      start: ignore,
      end: (c: AcquireContext | ReleaseContext) => void storeAt.push(`end ${c.kind} ${String(store.getStore())}`),
      asyncStart: ignore,
      asyncEnd: (c: AcquireContext | ReleaseContext) => void storeAt.push(`asyncEnd ${c.kind} ${String(store.getStore())}`),
      error: ignore,
    };
    acquire.start.bindStore(store, (c) => `acquire ${c.id}`);
    release.start.bindStore(store, (c) => `release ${String(c.id)}`);
    acquire.subscribe(handlers);
    release.subscribe(handlers);
    try {
      const held = await ctx.holdfast.lock('dc:store').acquire();
      assert.equal(store.getStore(), undefined, 'the caller runs in its own context');
      await held.release();
      assert.equal(store.getStore(), undefined);
      const id = oneAcquired('lock', 'dc:store').id;
      assert.deepEqual(storeAt, [`end lock acquire ${id}`, `asyncEnd lock acquire ${id}`, `end lock release ${id}`, `asyncEnd lock release ${id}`]);
    } finally {
      acquire.unsubscribe(handlers);
      release.unsubscribe(handlers);
      acquire.start.unbindStore(store);
      release.start.unbindStore(store);
    }
  });
});

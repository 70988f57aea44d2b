/**
 * The diagnostics channels on the ZooKeeper backend, against a real standalone ZooKeeper: the lock, both sides of the
 * read-write lock and the semaphore publish their acquisitions and releases with the `zk-` kinds, the owner's
 * fingerprint (never the id), the czxid token, the hold count and the looks at the queue; a hold whose session is
 * lost appears on `holdfast:lost`, and its release then is `not-held`.
 */
import assert from 'node:assert/strict';
import dc from 'node:diagnostics_channel';
import { after, before, beforeEach, it } from 'node:test';
import { CHANNELS, fingerprint, type AcquireContext, type LostMessage, type ReleaseContext } from '../../src/index.js';
import { AcquireTimeoutError, LockLostError, LockNotHeldError, type ZooKeeperHoldfast } from '../../src/zookeeper/index.js';
import { TcpProxy } from '../support/tcp-proxy.js';
import { ZkCluster, zkDescribe } from '../support/zookeeper.js';
import { makeZk, sleep, uniq } from './helpers.js';

zkDescribe('ZooKeeper diagnostics channels', () => {
  let zk: ZkCluster;
  let a: ZooKeeperHoldfast;
  const acquired: AcquireContext[] = [];
  const released: ReleaseContext[] = [];
  const lost: LostMessage[] = [];
  const acquireHandlers = { asyncEnd: (ctx: AcquireContext) => void acquired.push(ctx) };
  const releaseHandlers = { asyncEnd: (ctx: ReleaseContext) => void released.push(ctx) };
  const onLost = (m: unknown): void => void lost.push(m as LostMessage);
  // (Node accepts a partial set of handlers; its types ask for all five)
  type Handlers<T extends object> = Parameters<dc.TracingChannel<unknown, T>['subscribe']>[0];

  before(async () => {
    zk = await ZkCluster.start({ tickTime: 500 }); // sessions of 1–10 s
    a = await makeZk(zk.connectionString);
    dc.tracingChannel<unknown, AcquireContext>(CHANNELS.acquire).subscribe(acquireHandlers as Handlers<AcquireContext>);
    dc.tracingChannel<unknown, ReleaseContext>(CHANNELS.release).subscribe(releaseHandlers as Handlers<ReleaseContext>);
    dc.subscribe(CHANNELS.lost, onLost);
  });
  after(async () => {
    dc.tracingChannel<unknown, AcquireContext>(CHANNELS.acquire).unsubscribe(acquireHandlers as Handlers<AcquireContext>);
    dc.tracingChannel<unknown, ReleaseContext>(CHANNELS.release).unsubscribe(releaseHandlers as Handlers<ReleaseContext>);
    dc.unsubscribe(CHANNELS.lost, onLost);
    await a?.close();
    await zk?.stop();
  });
  beforeEach(() => {
    acquired.length = 0;
    released.length = 0;
    lost.length = 0;
  });

  const ofName = <T extends { name: string }>(list: T[], name: string): T[] => list.filter((c) => c.name === name);
  /** No owner id may appear in any payload. */
  const assertNoSecret = (...secrets: string[]): void => {
    const text = JSON.stringify([acquired, released, lost], (_k, v: unknown) => (v instanceof Error ? v.message : v));
    for (const secret of secrets) assert.ok(!text.includes(secret), `a payload carries the owner id ${secret}`);
  };

  void it('the lock: acquisitions (first, re-entry, busy, timed out, waited) and releases, with fingerprint, czxid token, hold count and queue looks', async () => {
    const name = uniq('dc-lock');
    const lock = a.lock(name);
    const first = await lock.acquire({ owner: 'dc-owner' });
    const again = await lock.acquire({ owner: 'dc-owner' });
    assert.equal(await lock.tryAcquire(), null);
    await assert.rejects(lock.acquire({ timeout: 200 }), AcquireTimeoutError);
    const waiting = lock.acquire({ timeout: 10_000 });
    await sleep(200);
    await again.release();
    await first.release();
    const next = await waiting;
    await next.release();

    const [one, two, busy, timedOut, waited, ...rest] = ofName(acquired, name);
    assert.deepEqual(rest, []);
    for (const ctx of [one, two, busy, timedOut, waited]) assert.equal(ctx!.kind, 'zk-lock');
    assert.deepEqual(
      [one, two].map((c) => [c!.outcome, c!.fingerprint, c!.token, c!.holdCount, c!.attempts]),
      [
        ['acquired', fingerprint('dc-owner'), first.token, 1, 1],
        ['acquired', fingerprint('dc-owner'), first.token, 2, 0], // a re-entry asks ZooKeeper nothing
      ],
    );
    assert.ok(first.token > 0);
    assert.deepEqual([busy!.outcome, busy!.attempts], ['timed-out', 1]);
    assert.equal(timedOut!.outcome, 'timed-out');
    assert.ok(timedOut!.waitedMs >= 190, String(timedOut!.waitedMs));
    assert.equal(waited!.outcome, 'acquired');
    assert.equal(waited!.fingerprint, fingerprint(next.owner));
    assert.equal(waited!.token, next.token);
    assert.ok(waited!.attempts >= 2, `a wait looks at the queue again when woken: ${waited!.attempts}`);

    const releases = ofName(released, name);
    assert.deepEqual(
      releases.map((r) => [r.id, r.kind, r.outcome, r.fingerprint, r.token]),
      [
        [two!.id, 'zk-lock', 'released', fingerprint('dc-owner'), first.token],
        [one!.id, 'zk-lock', 'released', fingerprint('dc-owner'), first.token],
        [waited!.id, 'zk-lock', 'released', fingerprint(next.owner), next.token],
      ],
    );
    assert.ok(releases.every((r) => r.heldMs !== undefined && r.heldMs >= 0));
    assertNoSecret(next.owner);
  });

  void it('the read-write lock and the semaphore: their own kinds; a permit counts 1 permit and no hold count', async () => {
    const name = uniq('dc-rw');
    const rw = a.readWriteLock(name);
    const read = await rw.readLock().acquire();
    await read.release();
    const write = await rw.writeLock().acquire();
    await write.release();
    const semName = uniq('dc-sem');
    const permit = await a.semaphore(semName, 2).acquire();
    await permit.release();

    const cases: [string, string, number][] = [
      ['zk-read-lock', name, read.token],
      ['zk-write-lock', name, write.token],
      ['zk-semaphore', semName, permit.token],
    ];
    for (const [kind, lockName, token] of cases) {
      const [ctx, ...more] = acquired.filter((c) => c.kind === kind && c.name === lockName);
      assert.deepEqual(more, [], kind);
      assert.equal(ctx!.outcome, 'acquired', kind);
      assert.equal(ctx!.token, token, kind);
      assert.equal(ctx!.attempts, 1, kind);
      const [rel, ...moreReleases] = released.filter((r) => r.kind === kind && r.name === lockName);
      assert.deepEqual(moreReleases, [], kind);
      assert.equal(rel!.id, ctx!.id, kind);
      assert.equal(rel!.outcome, 'released', kind);
    }
    const permitCtx = acquired.find((c) => c.kind === 'zk-semaphore')!;
    assert.deepEqual([permitCtx.permits, permitCtx.holdCount, permitCtx.fingerprint], [1, undefined, fingerprint(permit.owner)]);
    assert.equal(acquired.find((c) => c.kind === 'zk-write-lock')!.holdCount, 1);
    assertNoSecret(read.owner, write.owner, permit.owner);
  });

  void it('a session lost while held: holdfast:lost for every hold of it, and the releases after are not-held', async () => {
    const proxy = await TcpProxy.start(zk.nodes[0]!.clientPort);
    const c = await makeZk(proxy.address, { sessionTimeout: 2000 });
    try {
      const name = uniq('dc-lost');
      const held = await c.lock(name).acquire();
      const permit = await c.semaphore(name, 1).acquire();
      proxy.blackhole();
      // the session is lost once it went unconfirmed for its 2 s timeout; a loaded machine runs the client's timers late
      for (let waited = 0; (lost.length < 2 || !(held.lost && permit.lost)) && waited < 30_000; waited += 100) await sleep(100);
      assert.ok(held.lost && permit.lost, 'both holds lost');
      const byKind = new Map(lost.map((m) => [m.kind, m]));
      assert.equal(lost.length, 2, JSON.stringify(lost.map((m) => [m.kind, m.reason])));
      for (const [kind, h] of [
        ['zk-lock', held],
        ['zk-semaphore', permit],
      ] as const) {
        const m = byKind.get(kind);
        assert.ok(m, `${kind} lost`);
        assert.equal(m.name, name);
        assert.equal(m.fingerprint, fingerprint(h.owner));
        assert.equal(m.token, h.token);
        assert.ok(['connection', 'expired'].includes(m.reason), m.reason);
        assert.ok(m.error instanceof LockLostError);
        assert.equal(m.error, h.signal.reason, 'the error the signal aborted with');
      }
      proxy.heal();
      await assert.rejects(held.release(), LockNotHeldError);
      await assert.rejects(permit.release(), LockNotHeldError);
      assert.deepEqual(
        ofName(released, name).map((r) => [r.kind, r.outcome]),
        [
          ['zk-lock', 'not-held'],
          ['zk-semaphore', 'not-held'],
        ],
      );
      assertNoSecret(held.owner, permit.owner);
    } finally {
      await c.close();
      await proxy.stop();
    }
  });
});

/**
 * Replica sync after acquire (WAIT): a master and a real replica; a replica that does not acknowledge in time makes the
 * acquisition roll back with ReplicationNotReachedError.
 */
import assert from 'node:assert/strict';
import { after, before, it } from 'node:test';
import { ReplicationNotReachedError, type Holdfast } from '../../src/index.js';
import { cli, infoField, until } from '../support/redis-cli.js';
import { RedisServer } from '../support/redis-server.js';
import { describeEachAdapter } from '../support/suite.js';

describeEachAdapter('replicaSync', (ctx) => {
  let replica: RedisServer;
  before(async () => {
    replica = await RedisServer.start({ args: ['--replicaof', '127.0.0.1', String(ctx.server.port)] });
    await until(async () => infoField(await cli(replica.port, 'INFO', 'replication'), 'master_link_status') === 'up', 10_000, 'replica link');
  });
  after(async () => {
    await replica?.stop();
  });

  void it('waits for the replica: the lock is on the replica when acquire returns', async () => {
    const { holdfast, dispose } = await ctx.open({ replicaSync: { replicas: 1, timeout: 2000 } });
    try {
      const held = await holdfast.lock('r').acquire({ lease: 10_000 });
      assert.equal(await cli(replica.port, 'EXISTS', holdfast.core.keys.lock('r')), '1');
      await held.release();
    } finally {
      await dispose();
    }
  });

  void it('rolls the acquisition back when the replica does not acknowledge in time', async () => {
    const { holdfast, dispose } = await ctx.open();
    replica.pause();
    try {
      const t0 = performance.now();
      const error = await holdfast
        .lock('r2')
        .acquire({ lease: 10_000, replicaSync: { replicas: 1, timeout: 300 } })
        .then(
          () => assert.fail('acquired without the replica'),
          (e: unknown) => e,
        );
      assert.ok(error instanceof ReplicationNotReachedError, String(error));
      assert.equal(error.code, 'REPLICATION_NOT_REACHED');
      assert.equal(error.required, 1);
      assert.equal(error.reached, 0);
      assert.ok(performance.now() - t0 < 2000);
      assert.equal(await holdfast.lock('r2').isLocked(), false, 'rolled back on the master');
      // replicaSync: false turns a client-wide setting off for one acquire; without sync it succeeds.
      const held = await holdfast.lock('r2').acquire({ lease: 10_000, replicaSync: false });
      await held.release();
    } finally {
      replica.resume();
      await dispose();
    }
  });

  void it('validates the option', async () => {
    const { holdfast, dispose } = await ctx.open();
    try {
      await assert.rejects(holdfast.lock('v').acquire({ replicaSync: { replicas: 0, timeout: 10 } }), RangeError);
      await assert.rejects(holdfast.lock('v').acquire({ replicaSync: { replicas: 1, timeout: 0 } }), RangeError);
      await assert.rejects(holdfast.lock('v').acquire({ replicaSync: { replicas: 1, timeout: 10, extra: 1 } as never }), TypeError);
      assert.equal(await holdfast.lock('v').isLocked(), false);
    } finally {
      await dispose();
    }
  });
}, { server: { args: ['--repl-diskless-sync-delay', '0'] }, requiresServer: 'starts a replica of the server (an in-process store has no replicas)', notOnPostgres: 'replicaSync waits for Redis replicas (WAIT): a Redis server feature' });

/** Every owner-held primitive: how to take it, and whether it is still taken. */
const PRIMITIVES: {
  kind: string;
  take: (h: Holdfast, name: string, options: object) => Promise<unknown>;
  taken: (h: Holdfast, name: string) => Promise<boolean>;
}[] = [
  { kind: 'Lock', take: (h, n, o) => h.lock(n).acquire(o), taken: (h, n) => h.lock(n).isLocked() },
  { kind: 'FairLock', take: (h, n, o) => h.fairLock(n).acquire(o), taken: (h, n) => h.fairLock(n).isLocked() },
  {
    kind: 'read lock',
    take: (h, n, o) => h.readWriteLock(n).readLock().acquire(o),
    taken: async (h, n) => (await h.readWriteLock(n).inspect()).readers > 0,
  },
  {
    kind: 'write lock',
    take: (h, n, o) => h.readWriteLock(n).writeLock().acquire(o),
    taken: async (h, n) => (await h.readWriteLock(n).inspect()).writer !== null,
  },
  {
    kind: 'expirable permits',
    take: async (h, n, o) => {
      await h.permitExpirableSemaphore(n).trySetPermits(2);
      return h.permitExpirableSemaphore(n).acquire(2, o);
    },
    taken: async (h, n) => (await h.permitExpirableSemaphore(n).inspect()).acquired > 0,
  },
];

describeEachAdapter('replicaSync on every primitive (a standalone server: no replica to reach)', (ctx) => {
  for (const p of PRIMITIVES) {
    void it(`${p.kind}: the client's replicaSync rolls the acquisition back with REPLICATION_NOT_REACHED`, async () => {
      const { holdfast, dispose } = await ctx.open({ replicaSync: { replicas: 1, timeout: 50 } });
      try {
        const name = `rs-${p.kind.replace(/ /g, '-')}`;
        const error = await p.take(holdfast, name, {}).then(
          () => assert.fail('acquired without the replica'),
          (e: unknown) => e,
        );
        assert.ok(error instanceof ReplicationNotReachedError, String(error));
        assert.equal(error.code, 'REPLICATION_NOT_REACHED');
        assert.equal(error.reached, 0);
        assert.equal(await p.taken(holdfast, name), false, 'rolled back: nothing is held');
        // per acquisition, `replicaSync: false` turns it off
        const held = (await p.take(holdfast, name, { replicaSync: false })) as AsyncDisposable;
        assert.equal(await p.taken(holdfast, name), true);
        await held[Symbol.asyncDispose]();
      } finally {
        await dispose();
      }
    });
  }
}, { requiresServer: 'WAIT counts the replicas of a Redis server', notOnPostgres: 'replicaSync waits for Redis replicas (WAIT): a Redis server feature' });

/**
 * Replica sync after acquire (WAIT): a master and a real replica; a replica that does not acknowledge in time makes the
 * acquisition roll back with ReplicationNotReachedError.
 */
import assert from 'node:assert/strict';
import { after, before, it } from 'node:test';
import { ReplicationNotReachedError } from '../../src/index.js';
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
}, { server: { args: ['--repl-diskless-sync-delay', '0'] }, requiresServer: 'starts a replica of the server (an in-process store has no replicas)' });

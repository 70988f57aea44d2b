/**
 * `replicaSync: { aof: true }` for real: `WAITAOF` (Redis ≥ 7.2, Valkey ≥ 7.2) against a master and a replica that both
 * write an AOF. Where the server has no WAITAOF (Debian's Redis 7.0), the acquisition must fail with the server's own
 * error and leave nothing held. Runs on each server of `npm run test:topologies` (Redis, Valkey), once per adapter.
 */
import assert from 'node:assert/strict';
import { after, before, it } from 'node:test';
import { ReplicationNotReachedError, ScriptError } from '../../src/index.js';
import { cli, infoField, until } from '../support/redis-cli.js';
import { RedisServer } from '../support/redis-server.js';
import { describeEachAdapter } from '../support/suite.js';

const AOF = ['--appendonly', 'yes', '--appendfsync', 'always', '--repl-diskless-sync-delay', '0'];

/** `7.2.4` → `[7, 2]`. Valkey reports the Redis version it is compatible with in `redis_version` (7.2.4 for Valkey 8). */
function versionOf(info: string): [number, number] {
  const [major = 0, minor = 0] = (infoField(info, 'redis_version') ?? '0.0').split('.').map(Number);
  return [major, minor];
}

describeEachAdapter(
  'replicaSync with aof: WAITAOF',
  (ctx) => {
    let replica: RedisServer;
    let supported = false;
    let server = '';
    before(async () => {
      replica = await RedisServer.start({ args: [...AOF, '--replicaof', '127.0.0.1', String(ctx.server.port)] });
      await until(async () => infoField(await cli(replica.port, 'INFO', 'replication'), 'master_link_status') === 'up', 10_000, 'replica link');
      const info = await cli(ctx.server.port, 'INFO', 'server');
      const [major, minor] = versionOf(info);
      supported = major > 7 || (major === 7 && minor >= 2);
      server = infoField(info, 'valkey_version') ? `Valkey ${infoField(info, 'valkey_version')}` : `Redis ${infoField(info, 'redis_version')}`;
    });
    after(async () => {
      await replica?.stop();
    });

    void it('the lock is in the AOF of the master and of the replica when acquire returns (or the server refuses WAITAOF)', async (t) => {
      const { holdfast, dispose } = await ctx.open({ replicaSync: { replicas: 1, timeout: 3000, aof: true } });
      try {
        const lock = holdfast.lock('aof');
        if (!supported) {
          t.diagnostic(`${server} has no WAITAOF: the acquisition fails with its error and is rolled back`);
          await assert.rejects(lock.acquire({ lease: 10_000 }), (e: unknown) => e instanceof ScriptError && /WAITAOF|unknown command/i.test(e.message));
          assert.equal(await lock.isLocked(), false, 'rolled back');
          return;
        }
        t.diagnostic(`${server}: WAITAOF`);
        const held = await lock.acquire({ lease: 10_000 });
        assert.equal(await cli(replica.port, 'EXISTS', holdfast.core.keys.lock('aof')), '1', 'on the replica');
        await held.release();
      } finally {
        await dispose();
      }
    });

    void it('a replica that does not fsync in time rolls the acquisition back with ReplicationNotReachedError', async (t) => {
      if (!supported) {
        t.skip(`${server} has no WAITAOF`);
        return;
      }
      const { holdfast, dispose } = await ctx.open();
      replica.pause();
      try {
        const error = await holdfast
          .lock('aof2')
          .acquire({ lease: 10_000, replicaSync: { replicas: 1, timeout: 300, aof: true } })
          .then(
            () => assert.fail('acquired without the replica'),
            (e: unknown) => e,
          );
        assert.ok(error instanceof ReplicationNotReachedError, String(error));
        assert.equal(error.required, 1);
        assert.equal(error.reached, 0);
        assert.equal(await holdfast.lock('aof2').isLocked(), false, 'rolled back on the master');
      } finally {
        replica.resume();
        await dispose();
      }
    });

    void it('a master without appendonly: the local fsync cannot happen, so the acquisition is refused', async (t) => {
      if (!supported) {
        t.skip(`${server} has no WAITAOF`);
        return;
      }
      const { holdfast, dispose } = await ctx.open();
      await cli(ctx.server.port, 'CONFIG', 'SET', 'appendonly', 'no');
      try {
        await assert.rejects(
          holdfast.lock('aof3').acquire({ lease: 10_000, replicaSync: { replicas: 1, timeout: 300, aof: true } }),
          (e: unknown) => e instanceof ScriptError && /appendonly/i.test(e.message),
        );
        assert.equal(await holdfast.lock('aof3').isLocked(), false, 'rolled back');
      } finally {
        await cli(ctx.server.port, 'CONFIG', 'SET', 'appendonly', 'yes');
        await dispose();
      }
    });
  },
  { server: { args: AOF }, requiresServer: 'starts a replica of a redis-server with an append-only file', notOnPostgres: 'WAITAOF (the append-only file of a Redis server and its replica) is a Redis server feature' },
);

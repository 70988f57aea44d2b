/**
 * Redlock keeps a lock a majority held throughout: renewal takes the key back on a node that restarted empty
 * (never where another owner holds it), so restarting the nodes one at a time never drops the lock.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { Redis } from 'ioredis';
import { Redlock, type RedlockOptions } from '../../src/index.js';
import { describeEachAdapter, sleep } from '../support/suite.js';

describeEachAdapter(
  'Redlock with nodes restarted one at a time',
  (ctx) => {
    const clients: unknown[] = [];
    before(async () => {
      for (const s of ctx.servers) clients.push(await ctx.adapter.connect(s.url));
    });
    after(async () => {
      for (const c of clients) await ctx.adapter.disconnect(c);
    });

    const make = (options: Omit<RedlockOptions, 'redis'> = {}): Redlock =>
      new Redlock({ redis: clients, prefix: `rr${Math.random().toString(36).slice(2, 7)}:`, nodeTimeout: 300, ...options });

    test('a lock held by a majority throughout survives every node restarting empty, one after another', async (t) => {
      if (!ctx.requireServer(t, 'pauses, kills or restarts a redis-server process')) return;
      const redlock = make({ watchdogLease: 3000, watchdogInterval: 250 });
      const other = new Redlock({ redis: clients, prefix: redlock.keys.prefix, nodeTimeout: 300, retryCount: Infinity });
      try {
        const held = await redlock.lock('rolling').acquire();
        for (const [i, server] of ctx.servers.entries()) {
          await server.restart(); // empty: no persistence
          // back before the next goes down; give the watchdog a few renewals (the clients reconnect on their own)
          await sleep(1200);
          assert.equal(held.signal.aborted, false, `lost after restarting node ${i}`);
          const direct = new Redis(server.url);
          try {
            const value = await direct.get(redlock.keys.lock('rolling'));
            assert.ok(value?.endsWith(`:${held.owner}`), `node ${i} holds the lock again for its owner (got ${String(value)})`);
            assert.ok(Number(await direct.get(redlock.keys.fence('rolling'))) >= held.token, `node ${i}'s counter is at least the token`);
          } finally {
            direct.disconnect();
          }
        }
        assert.equal(await other.lock('rolling').tryAcquire(), null, 'nobody else gets it');
        await held.release();
        // retried until 5 s have passed: a busy machine's slow node answers cost attempts, not the test
        const next = await other.lock('rolling').acquire({ lease: 1000, timeout: 5000 });
        assert.ok(next.token > held.token, 'tokens keep growing across the restarts');
        await next.release();
      } finally {
        await redlock.close();
        await other.close();
      }
    });

    test('renewal never takes a node where another owner holds the key', async () => {
      const redlock = make({ watchdogLease: 1500, watchdogInterval: 200 });
      try {
        const held = await redlock.lock('foreign').acquire();
        const direct = new Redis(ctx.servers[0]!.url);
        try {
          // another owner on node 0 (as after a restart and someone else's minority attempt)
          await direct.set(redlock.keys.lock('foreign'), '1:999:someone-else', 'PX', 5000);
          await sleep(600);
          assert.equal(await direct.get(redlock.keys.lock('foreign')), '1:999:someone-else');
          assert.equal(held.signal.aborted, false, 'still held by the other two');
        } finally {
          direct.disconnect();
        }
        await held.release();
      } finally {
        await redlock.close();
      }
    });
  },
  { servers: 3, requiresServer: 'restarts redis-server processes one at a time', notOnPostgres: 'Redlock runs on a quorum of independent Redis servers: it has no meaning on one PostgreSQL' },
);

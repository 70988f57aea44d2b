/**
 * Per-entity locking leaves nothing behind: many distinct names acquired and released with every exclusive primitive
 * leave only the shared fencing counters (at most one per Cluster slot), and tokens still only grow per name. On
 * PostgreSQL the same promise: no row is left for a name once it is free and nobody waits (tokens come from one
 * sequence, so not even a counter row).
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Redis } from 'ioredis';
import { openLeftBehind } from '../support/left-behind.js';
import { describeEachAdapter } from '../support/suite.js';

describeEachAdapter('Keys left behind', (ctx) => {
  test('3,000 distinct names through Lock, FairLock, the read and write locks and withLock leave only fencing counters', async () => {
    const prefix = `kl${Math.random().toString(36).slice(2, 7)}:`;
    const { holdfast } = await ctx.open({ prefix });
    const store = await openLeftBehind(ctx);
    try {
      const last = new Map<string, number>();
      const step = async (i: number): Promise<void> => {
        const name = `order:${i % 600}`; // each name used by several primitives
        let token: number;
        switch (i % 5) {
          case 0:
            token = await holdfast.lock(name).withLock(({ token: t }) => t);
            break;
          case 1: {
            const h = await holdfast.lock(name).acquire({ lease: 10_000 });
            token = h.token;
            await h.release();
            break;
          }
          case 2: {
            const h = await holdfast.fairLock(name).acquire();
            token = h.token;
            await h.release();
            break;
          }
          case 3: {
            const h = await holdfast.readWriteLock(name).writeLock().acquire();
            token = h.token;
            await h.release();
            break;
          }
          default:
            await (await holdfast.readWriteLock(name).readLock().acquire()).release();
            return;
        }
        const before = last.get(name) ?? 0;
        assert.ok(token > before, `${name}: token ${token} after ${before}`);
        last.set(name, token);
      };
      for (let i = 0; i < 3000; i += 50) await Promise.all(Array.from({ length: 50 }, (_, j) => step(i + j)));
      const left = await store.under(prefix);
      if (ctx.adapter.postgres) {
        // tokens come from the schema's one sequence: no per-name counter either
        assert.deepEqual(left, [], 'no lock, waiter, marker or queue row is left');
        return;
      }
      const others = left.filter((k) => !k.endsWith('}:fence'));
      assert.deepEqual(others, [], 'no lock, marker or queue key is left');
      assert.ok(left.length <= 16384, `${left.length} counters`);
      const direct = new Redis(ctx.server.url);
      try {
        for (const k of left) assert.equal(await direct.ttl(k), -1, 'counters persist');
      } finally {
        direct.disconnect();
      }
    } finally {
      await store.close();
    }
  });

  test('migrateFencingCounters carries per-name counters of version 0.1 over: tokens keep growing, old keys go', async (t) => {
    if (!ctx.requireRedis(t, 'migrates the per-name fencing counter keys of version 0.1 in Redis (a PostgreSQL schema has one sequence)')) return;
    const prefix = `mg${Math.random().toString(36).slice(2, 7)}:`;
    const { holdfast } = await ctx.open({ prefix });
    const direct = new Redis(ctx.server.url);
    try {
      const names = ['order:1', 'order:2', 'user:{7}', 'sku:9'];
      for (const [i, name] of names.entries()) await direct.set(`${prefix}{${name}}:fence`, String(1000 * (i + 1)));
      assert.equal(await holdfast.migrateFencingCounters({ count: 10 }), names.length);
      for (const [i, name] of names.entries()) {
        assert.equal(await direct.exists(`${prefix}{${name}}:fence`), 0);
        const held = await holdfast.lock(name).acquire();
        assert.ok(held.token > 1000 * (i + 1), `${name}: ${held.token}`);
        await held.release();
      }
      assert.equal(await holdfast.migrateFencingCounters(), 0, 'nothing left to do');
    } finally {
      direct.disconnect();
    }
  });
});

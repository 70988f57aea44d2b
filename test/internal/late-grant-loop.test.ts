/**
 * A lease the store's replies cannot keep up with: no hot loop. A lease no longer than the drift allowance is refused
 * at once, before anything is sent; a grant that comes past its lease is undone and asked for again with the
 * late-grant backoff (a few times a second), never at once. On every adapter: the replies are slowed by a wrapper of
 * the client (a Redis transport, or a PostgreSQL pool) that counts the operations it sends.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type pg from 'pg';
import { Holdfast, type RedisTransport } from '../../src/index.js';
import { toTransport } from '../../src/holdfast.js';
import { postgresUrlOf } from '../support/clients.js';
import { describeEachAdapter, sleep } from '../support/suite.js';

describeEachAdapter('Late grants', (ctx) => {
  /** A client whose every operation answers `delayMs` late, and how many were sent. */
  async function slowClient(delayMs: () => number): Promise<{ holdfast: Holdfast; calls: () => number; dispose: () => Promise<void> }> {
    const { redis, dispose } = await ctx.open();
    let calls = 0;
    let holdfast: Holdfast;
    const prefix = `late${Math.random().toString(36).slice(2, 8)}:`;
    if (ctx.adapter.postgres) {
      const pool = redis as pg.Pool;
      const query = async (text: string, values?: unknown[]): Promise<unknown> => {
        if (text.includes('.lock_acquire(')) calls++;
        const reply = await pool.query(text, values);
        await sleep(delayMs());
        return reply;
      };
      const slow = new Proxy(pool, { get: (target, key) => (key === 'query' ? query : Reflect.get(target, key)) });
      holdfast = new Holdfast({ postgres: slow, schema: postgresUrlOf(ctx.urls[0]!).schema, prefix });
    } else {
      const base = toTransport(redis);
      const slow: RedisTransport = {
        ...base,
        kind: 'slow',
        async evalsha(sha, keys, args) {
          if (keys[0]?.endsWith(':lock') && keys[1]?.endsWith(':fence')) calls++; // lock/acquire (its keys: lock, fencing counter, waiters)
          const reply = await base.evalsha(sha, keys, args);
          await sleep(delayMs());
          return reply;
        },
      };
      holdfast = new Holdfast({ redis: slow, prefix });
    }
    return {
      holdfast,
      calls: () => calls,
      dispose: async () => {
        await holdfast.close();
        await dispose();
      },
    };
  }

  test('a lease no longer than the drift allowance is refused at once, before anything is sent', async () => {
    const { holdfast, calls, dispose } = await slowClient(() => 0);
    try {
      for (const lease of [1, 2]) {
        const t0 = performance.now();
        await assert.rejects(holdfast.lock('tiny').acquire({ lease, timeout: 2000 }), (error: unknown) => {
          assert.ok(error instanceof RangeError);
          assert.match(error.message, /clock drift.*at least 3 ms/);
          return true;
        });
        assert.ok(performance.now() - t0 < 1000);
      }
      await assert.rejects(holdfast.permitExpirableSemaphore('tiny').acquire(1, { lease: 1 }), RangeError);
      assert.equal(calls(), 0, 'nothing was sent');
      const held = await holdfast.lock('tiny').acquire({ lease: 5000 });
      await assert.rejects(held.extend(2), RangeError);
      await held.release();
    } finally {
      await dispose();
    }
  });

  test('a lease every round trip outlasts fails within a second, saying why, after a few tries', async () => {
    // every reply comes 40 ms late: a 20 ms lease is over before its grant arrives, every time
    const { holdfast, calls, dispose } = await slowClient(() => 40);
    try {
      const t0 = performance.now();
      await assert.rejects(holdfast.lock('slow').acquire({ lease: 20, timeout: 30_000 }), (error: unknown) => {
        assert.ok(error instanceof RangeError, String(error));
        assert.match(error.message, /shorter than the round trips to the store/);
        return true;
      });
      const took = performance.now() - t0;
      // three grants, each with the late-grant pause before the next (50, 100 ms): well within a second of replies
      assert.equal(calls(), 3, `${calls()} acquire operations in ${took.toFixed(0)} ms`);
      assert.equal(await holdfast.lock('slow').isLocked(), false, 'every late grant was undone');
    } finally {
      await dispose();
    }
  });
});

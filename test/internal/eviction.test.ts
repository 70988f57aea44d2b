/**
 * A Redis that can evict keys can evict a held lock. holdfast reads `maxmemory-policy` at the first acquisition and
 * warns (or refuses); a holder whose lock was evicted learns it no later than its next renewal.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Redis } from 'ioredis';
import { EvictionPolicyError, LockLostError, type HoldfastWarning } from '../../src/index.js';
import { describeEachAdapter, sleep } from '../support/suite.js';

describeEachAdapter(
  'A Redis that evicts keys',
  (ctx) => {
    test('the first acquisition warns about the policy (a typed warning event), once', async (t) => {
      if (!ctx.requireServer(t, "sets the server's maxmemory-policy (an in-process store never evicts, its policy is noeviction)")) return;
      const { holdfast } = await ctx.open();
      const warnings: HoldfastWarning[] = [];
      holdfast.on('warning', (w) => warnings.push(w));
      await (await holdfast.lock('w1').acquire()).release();
      for (let i = 0; i < 50 && warnings.length === 0; i++) await sleep(10);
      await (await holdfast.lock('w2').acquire()).release();
      await sleep(50);
      assert.equal(warnings.length, 1);
      assert.equal(warnings[0]!.code, 'EVICTION_POLICY');
      assert.equal(warnings[0]!.policy, 'volatile-ttl');
      assert.match(warnings[0]!.message, /noeviction/);
    });

    test('without a warning listener, many clients of one process give the process warning once for this server', async (t) => {
      if (!ctx.requireServer(t, "sets the server's maxmemory-policy (an in-process store never evicts, its policy is noeviction)")) return;
      const given: string[] = [];
      const onWarning = (w: Error & { code?: string }): void => void (w.code === 'HOLDFAST_EVICTION_POLICY' && given.push(w.message));
      process.on('warning', onWarning);
      try {
        for (let i = 0; i < 3; i++) {
          const { holdfast } = await ctx.open();
          await (await holdfast.lock(`p${i}`).acquire()).release();
          await sleep(200); // the check runs behind the acquisition
        }
        for (let i = 0; i < 50 && given.length === 0; i++) await sleep(10);
        assert.equal(given.length, 1, given.join('\n'));
        assert.match(given[0]!, /volatile-ttl/);
      } finally {
        process.off('warning', onWarning);
      }
    });

    test("evictionPolicy: 'refuse' rejects every acquisition with EvictionPolicyError", async (t) => {
      if (!ctx.requireServer(t, "sets the server's maxmemory-policy (an in-process store never evicts, its policy is noeviction)")) return;
      const { holdfast } = await ctx.open({ evictionPolicy: 'refuse' });
      await assert.rejects(holdfast.lock('r').acquire(), (e: unknown) => e instanceof EvictionPolicyError && e.code === 'EVICTION_POLICY');
      await assert.rejects(holdfast.fairLock('r').tryAcquire(), EvictionPolicyError);
      assert.equal(await holdfast.lock('r').isLocked(), false, 'nothing was taken');
    });

    test("evictionPolicy: 'ignore' does not ask", async () => {
      const { holdfast } = await ctx.open({ evictionPolicy: 'ignore' });
      let warned = false;
      holdfast.on('warning', () => (warned = true));
      await (await holdfast.lock('i').acquire()).release();
      await sleep(50);
      assert.equal(warned, false);
    });

    test('a held lock evicted under memory pressure: another client can take it, and the holder’s signal aborts by its next renewal', async (t) => {
      if (!ctx.requireServer(t, "fills the server's memory under an evicting policy (an in-process store never evicts)")) return;
      const prefix = `ev${Math.random().toString(36).slice(2, 7)}:`;
      const { holdfast } = await ctx.open({ prefix, watchdogLease: 3000, watchdogInterval: 500, evictionPolicy: 'ignore' });
      const other = await ctx.open({ prefix, evictionPolicy: 'ignore' });
      const held = await holdfast.lock('evicted').acquire();
      const key = holdfast.core.keys.lock('evicted');
      const direct = new Redis(ctx.server.url);
      try {
        // cache data with long TTLs: under volatile-ttl the lock (shortest TTL) goes first
        const value = 'x'.repeat(50_000);
        let i = 0;
        while ((await direct.exists(key)) === 1) {
          await direct.set(`cache:${ctx.adapter.name}:${i++}`, value, 'EX', 600);
          assert.ok(i < 2000, 'the lock was never evicted');
        }
        const evictedAt = performance.now();
        const taken = await other.holdfast.lock('evicted').tryAcquire({ lease: 5000 });
        assert.ok(taken, 'another client got the evicted lock');
        assert.ok(taken.token > held.token);
        await new Promise((resolve) => held.signal.addEventListener('abort', resolve, { once: true }));
        const after = performance.now() - evictedAt;
        assert.ok(after <= 500 + 400, `aborted ${Math.round(after)} ms after the eviction (renewal every 500 ms)`);
        assert.equal((held.signal.reason as LockLostError).reason, 'taken-over');
        await taken.release();
      } finally {
        await direct.flushall(); // this suite's own server
        direct.disconnect();
      }
    });
  },
  { server: { args: ['--maxmemory', '3mb', '--maxmemory-policy', 'volatile-ttl'] }, notOnPostgres: 'eviction under maxmemory is a Redis server feature' },
);

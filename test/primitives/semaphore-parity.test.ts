/**
 * What Redisson / redis-semaphore users reach for on a counting semaphore: `trySetPermits(n, { ttl })`, `exists()`,
 * `releaseIfExists` (nothing happens on a deleted semaphore, and a held permit released after its semaphore is gone
 * does not create it again: no key without a TTL is left behind), and zero permits as a no-op.
 */
import assert from 'node:assert/strict';
import { it } from 'node:test';
import { postgresUrlOf } from '../support/clients.js';
import { openPool } from '../support/postgres.js';
import { describeEachAdapter, sleep } from '../support/suite.js';

describeEachAdapter('Semaphore parity', (ctx) => {
  /**
   * The semaphore's TTL as PTTL reports it (-2: it does not exist, -1: it has none). A counting semaphore has no
   * public view of its TTL: on PostgreSQL this reads its row (src/postgres/sql/sem.sql), as PTTL reads its key.
   */
  const pttl = async (name: string): Promise<number> => {
    const key = ctx.holdfast.core.keys.semaphore(name);
    if (!ctx.adapter.postgres) return Number(await ctx.holdfast.core.command(['PTTL', key]));
    const { url, schema } = postgresUrlOf(ctx.urls[0]!);
    const pool = openPool(url, 1);
    try {
      const { rows } = await pool.query(
        `SELECT coalesce(s.expires_at - n.now, -1) AS pttl FROM ${schema}.sem s, (SELECT ${schema}.now_ms() AS now) n
         WHERE s.key = $1 AND (s.expires_at IS NULL OR s.expires_at > n.now)`,
        [key],
      );
      return rows.length === 0 ? -2 : Number(rows[0]!.pttl);
    } finally {
      await pool.end();
    }
  };

  void it('trySetPermits with a TTL: the semaphore expires whoever holds permits; a late release creates nothing', async () => {
    const sem = ctx.holdfast.semaphore('sp-ttl');
    assert.equal(await sem.exists(), false);
    assert.equal(await sem.trySetPermits(2, { ttl: 600 }), true);
    assert.equal(await sem.trySetPermits(5, { ttl: 600 }), false, 'set only once');
    assert.equal(await sem.exists(), true);
    const held = await sem.acquire(1);
    const ttl = await pttl('sp-ttl');
    assert.ok(ttl > 0 && ttl <= 600, `acquiring keeps the TTL (${ttl})`);
    await sleep(700);
    assert.equal(await sem.exists(), false);
    await held.release(); // the semaphore is gone: nothing is given back, nothing created
    assert.equal(await sem.exists(), false);
    assert.equal(await pttl('sp-ttl'), -2);
  });

  void it('releaseIfExists: nothing on a deleted semaphore; release() still creates one (a total meant to persist)', async () => {
    const sem = ctx.holdfast.semaphore('sp-rie');
    assert.equal(await sem.releaseIfExists(2), null);
    assert.equal(await sem.exists(), false);
    await sem.trySetPermits(1);
    assert.equal(await sem.releaseIfExists(2), 3);
    assert.equal(await sem.releaseIfExists(0), 3);
    const held = await sem.acquire(3);
    assert.equal(await sem.delete(), true);
    await held.release();
    assert.equal(await sem.exists(), false, 'a held permit released after delete() does not bring the semaphore back');
    assert.equal(await sem.release(1), 1);
    assert.equal(await pttl('sp-rie'), -1, 'release() creates a persisting semaphore, as before');
    await sem.delete();
  });

  void it('zero permits is a no-op: acquire(0) and tryAcquire(0) return at once, release(0) gives nothing back', async () => {
    const sem = ctx.holdfast.semaphore('sp-zero');
    const none = await sem.acquire(0);
    assert.equal(none.permits, 0);
    assert.equal((await sem.tryAcquire(0))?.permits, 0);
    await none.release();
    assert.equal(await sem.release(0), 0);
    assert.equal(await sem.exists(), false, 'zero permits wrote nothing');
    await sem.trySetPermits(1);
    await sem.acquire(1);
    assert.equal((await sem.acquire(0, { timeout: 0 })).permits, 0, 'even when no permit is free');
    await sem.delete();
  });

  void it('bad input is rejected before any Redis call', async () => {
    const sem = ctx.holdfast.semaphore('sp-bad');
    await assert.rejects(sem.trySetPermits(1, { ttl: 0 }), RangeError);
    await assert.rejects(sem.trySetPermits(1, { ttl: 1.5 }), RangeError);
    await assert.rejects(sem.trySetPermits(1, { ttl: '5' as never }), TypeError);
    await assert.rejects(sem.trySetPermits(1, { lease: 5 } as never), TypeError);
    await assert.rejects(sem.releaseIfExists(-1), RangeError);
    await assert.rejects(sem.release(-1), RangeError);
    await assert.rejects(sem.acquire(-1), RangeError);
    assert.equal(await sem.exists(), false);
  });
});

/**
 * Waking waiters on PostgreSQL: by NOTIFY on a connection of the client's own, within a round trip of the release
 * (far sooner than the holder's lease, which is all a waiter would otherwise sleep to); by polling when told not to
 * listen. Two clients with pools of their own stand for two processes.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { Holdfast } from '../../src/index.js';
import { createTestSchema, dropSchema, openPool } from '../support/postgres.js';
import { PgBouncer } from '../support/pgbouncer.js';

async function handOff(listen: boolean, url?: string): Promise<{ ms: number; wakeups: string; warnings: string[] }> {
  const schema = createTestSchema(listen ? 'notify' : 'poll');
  const pools = [openPool(url), openPool(url)];
  const [holder, waiter] = pools.map((pool) => new Holdfast({ postgres: pool, schema, listen })) as [Holdfast, Holdfast];
  const warnings: string[] = [];
  waiter.on('warning', (w) => warnings.push(w.code));
  try {
    const held = await holder.lock('wake').acquire(); // a 30 s watchdog lease: a waiter not woken would sleep that long
    const waiting = waiter.lock('wake').acquire({ timeout: 20_000 });
    // the waiter is registered once it has asked and found the lock taken
    for (let i = 0; i < 200 && (await waiter.lock('wake').inspect()).owner === null; i++) await new Promise((r) => setTimeout(r, 5));
    // long enough for the check of the listening connection (a probe NOTIFY, at most 2 s) to have answered
    await new Promise((r) => setTimeout(r, url === undefined ? 300 : 3000));
    const t0 = performance.now();
    await held.release();
    const got = await waiting;
    const ms = performance.now() - t0;
    assert.ok(got.token > held.token, 'tokens only grow');
    await got.release();
    const info = waiter.store;
    return { ms, wakeups: info.kind === 'postgres' ? info.wakeups : 'redis', warnings };
  } finally {
    await holder.close();
    await waiter.close();
    await Promise.all(pools.map((p) => p.end()));
    await dropSchema(schema);
  }
}

describe('PostgreSQL wake-ups', () => {
  test('a waiter in another client is woken by NOTIFY when the holder releases (not at the end of its 30 s lease)', async () => {
    const { ms, wakeups, warnings } = await handOff(true);
    assert.equal(wakeups, 'notify');
    assert.deepEqual(warnings, []);
    // a notified waiter asks again at once; without the notification it would sleep out the holder's lease (30 s)
    assert.ok(ms < 10_000, `woken ${ms.toFixed(1)} ms after the release`);
  });

  test('through PgBouncer in transaction mode LISTEN is found deaf: waiters poll, and it is said once', async () => {
    const bouncer = await PgBouncer.start({ poolMode: 'transaction', maxClientConn: 100, defaultPoolSize: 4 });
    try {
      const { ms, wakeups, warnings } = await handOff(true, bouncer.url);
      assert.equal(wakeups, 'polling');
      assert.deepEqual(warnings, ['POLLING']);
      assert.ok(ms < 10_000, `found free ${ms.toFixed(1)} ms after the release by polling`);
    } finally {
      await bouncer.stop();
    }
  });

  test('listen: false polls, and says so once with a POLLING warning', async () => {
    const { ms, wakeups, warnings } = await handOff(false);
    assert.equal(wakeups, 'polling');
    assert.deepEqual(warnings, ['POLLING']);
    assert.ok(ms < 10_000, `found free ${ms.toFixed(1)} ms after the release by polling`);
  });
});

/**
 * The shared `waitUntilFree` loop (internal/events.ts) on a real subscription: a signal aborted while the loop looks
 * (after it subscribed) ends the wait instead of leaving it asleep forever; a message its `freeOn` does not accept
 * makes it look again rather than return. The messages are sent as the store sends a wake-up: PUBLISH on Redis, the
 * schema's notify() on PostgreSQL.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type pg from 'pg';
import { waitUntilFree } from '../../src/internal/events.js';
import { postgresUrlOf } from '../support/clients.js';
import { describeEachAdapter, sleep } from '../support/suite.js';

describeEachAdapter('waitUntilFree loop', (ctx) => {
  /** Sends `message` to the waiters on `channel`, as an operation of the store does. */
  async function publish(channel: string, message: string): Promise<void> {
    if (!ctx.adapter.postgres) {
      await ctx.holdfast.core.command(['PUBLISH', channel, message], channel);
      return;
    }
    const pool = (await ctx.open()).redis as pg.Pool;
    const { schema } = postgresUrlOf(ctx.urls[0]!);
    await pool.query(`SELECT "${schema}".notify($1, $2)`, [channel, message]);
  }

  test('an abort while it looks ends the wait', async () => {
    const controller = new AbortController();
    let looks = 0;
    const waiting = waitUntilFree(
      ctx.holdfast.core,
      'wuf-abort-channel',
      async () => {
        if (++looks === 2) controller.abort(new Error('stop')); // the second look comes after the subscription
        return 60_000;
      },
      undefined,
      controller.signal,
    );
    await assert.rejects(waiting, /stop/);
    assert.equal(looks, 2);
  });

  test('a message freeOn does not accept makes it look again; one it accepts ends it', async () => {
    const core = ctx.holdfast.core;
    let looks = 0;
    const waiting = waitUntilFree(core, 'wuf-free-on', async () => (looks++, 60_000), 20_000, undefined, (m) => m === 'free');
    while (looks < 2) await sleep(10); // subscribed, asleep
    await publish('wuf-free-on', 'busy');
    while (looks < 3) await sleep(10);
    await publish('wuf-free-on', 'free');
    assert.equal(await waiting, true);
    assert.equal(looks, 3);
  });
});

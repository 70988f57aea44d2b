/**
 * FairLock liveness: a holder's fixed lease that lapses with waiters queued is handed to the head at once (a waiter
 * sleeps at most the holder's remaining lease), not at the next heartbeat.
 *
 * The clients beat every 5 s (`waiterTimeout` 25 s): a hand-off that waited for a heartbeat would take seconds, far
 * from one that comes when the lease lapses, so the bounds below can leave room for a loaded machine's delays (the
 * whole suite runs its files side by side on 2 cores) and still catch it.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { describeEachAdapter } from '../support/suite.js';

describeEachAdapter('FairLock liveness', (ctx) => {
  test('waiters taking fixed leases they never release get the lock one after another, a lease apart', async () => {
    const LEASE = 400;
    const N = 6;
    const prefix = `fl${Math.random().toString(36).slice(2, 7)}:`;
    const WAITER_TIMEOUT = 25_000; // a heartbeat every 5 s
    // each waiter on its own client, as separate instances would be
    const clients = await Promise.all(Array.from({ length: N }, () => ctx.open({ prefix })));
    const first = await clients[0]!.holdfast.fairLock('lapse', { waiterTimeout: WAITER_TIMEOUT }).acquire({ lease: LEASE });
    const t0 = performance.now();
    const got: { i: number; at: number; token: number }[] = [{ i: 0, at: 0, token: first.token }];
    const lock = clients[0]!.holdfast.fairLock('lapse', { waiterTimeout: WAITER_TIMEOUT });
    /** Resolves once `n` waiters have queued (those that held the lock since count too). */
    const queued = async (n: number): Promise<void> => {
      const deadline = performance.now() + 10_000;
      while (got.length - 1 + (await lock.inspect()).waiters.length < n) {
        if (performance.now() > deadline) throw new Error(`timed out waiting for ${n} waiters`);
        await new Promise((r) => setTimeout(r, 5));
      }
    };
    await Promise.all(
      clients.slice(1).map(async ({ holdfast }, j) => {
        // queue in order: each waiter once the one before it has queued (a client's first wait opens its
        // subscription, which takes longer on some stores than on others: a fixed stagger would not order them)
        await queued(j);
        const held = await holdfast.fairLock('lapse', { waiterTimeout: WAITER_TIMEOUT }).acquire({ lease: LEASE, timeout: 20_000 });
        got.push({ i: j + 1, at: performance.now() - t0, token: held.token });
        // never released: the lease lapses
      }),
    );
    got.sort((a, b) => a.at - b.at);
    if (process.env.DEBUG_FAIR) console.log(ctx.adapter.name, got.map((g) => Math.round(g.at)).join(" "));
    const total = got[got.length - 1]!.at;
    // about N-1 leases; the heartbeat alone (every 5 s, the clients' beats a few ms apart) would need seconds per hand-off
    assert.ok(total < (N - 1) * LEASE + 3000, `the last waiter got the lock after ${Math.round(total)} ms (${N - 1} leases of ${LEASE} ms)`);
    for (let k = 1; k < got.length; k++) {
      assert.ok(got[k]!.token > got[k - 1]!.token, 'tokens grow with each hand-off');
      // on a loaded machine one hand-off can come late; none may wait for a heartbeat
      assert.ok(got[k]!.at - got[k - 1]!.at < LEASE + 2500, `hand-off ${k} took ${Math.round(got[k]!.at - got[k - 1]!.at)} ms`);
    }
    assert.deepEqual(
      got.map((g) => g.i),
      Array.from({ length: N }, (_, i) => i),
      'FIFO order',
    );
  });
});

/**
 * `stopRefresh()` on every held object of the hold engine (redis-semaphore's `stopRefresh`): the watchdog stops, the
 * hold runs out one lease after its last renewal (signal: `expired`), and `extend()` still works; on both clients.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { LockLostError, type Holdfast, type Permit } from '../../src/index.js';
import type { LeasedHeld } from '../../src/internal/hold.js';
import { describeEachAdapter, sleep } from '../support/suite.js';

interface Kind {
  kind: string;
  take: (h: Holdfast, name: string, lease?: number) => Promise<LeasedHeld>;
  /** ms left of the hold's lease in the store (read through the primitive's own inspection), or -1 when it is not held there any more. */
  left: (h: Holdfast, name: string, held: LeasedHeld) => Promise<number>;
}

const orGone = (ms: number | null): number => (ms === null || ms < 0 ? -1 : ms);

const opts = (lease?: number): { lease?: number } => (lease === undefined ? {} : { lease });

const kinds: Kind[] = [
  { kind: 'Lock', take: (h, n, l) => h.lock(n).acquire(opts(l)), left: async (h, n) => orGone(await h.lock(n).remainingTtl()) },
  { kind: 'FairLock', take: (h, n, l) => h.fairLock(n).acquire(opts(l)), left: async (h, n) => orGone((await h.fairLock(n).inspect()).remainingTtl) },
  {
    kind: 'read lock',
    take: (h, n, l) => h.readWriteLock(n).readLock().acquire(opts(l)),
    left: async (h, n) => orGone(await h.readWriteLock(n).readLock().remainingTtl()),
  },
  {
    kind: 'write lock',
    take: (h, n, l) => h.readWriteLock(n).writeLock().acquire(opts(l)),
    left: async (h, n) => orGone(await h.readWriteLock(n).writeLock().remainingTtl()),
  },
  {
    kind: 'permit',
    take: async (h, n, l) => {
      const sem = h.permitExpirableSemaphore(n);
      await sem.trySetPermits(1);
      return sem.acquire(1, opts(l));
    },
    left: async (h, n, held) => orGone(await h.permitExpirableSemaphore(n).remainingLease((held as Permit).id)),
  },
];

const LEASE = 900;

describeEachAdapter('stopRefresh()', (ctx) => {
  for (const { kind, take, left } of kinds) {
    test(`${kind}: the watchdog stops, the hold runs out one lease after its last renewal (expired)`, async () => {
      const prefix = `sr${Math.random().toString(36).slice(2, 7)}:`;
      const { holdfast } = await ctx.open({ prefix, watchdogLease: LEASE, watchdogInterval: 200 });
      const name = `sr-${kind}`;
      const held = await take(holdfast, name);
      assert.equal(held.refreshing, true);
      await sleep(LEASE + 100); // past the first lease: renewed
      assert.equal(held.signal.aborted, false);
      held.stopRefresh();
      held.stopRefresh(); // idempotent
      const stoppedAt = performance.now();
      assert.equal(held.refreshing, false);
      // the lease in the store only goes down now (a renewal already in flight may still land once)
      let last = Infinity;
      let raised = 0;
      for (;;) {
        const ms = await left(holdfast, name, held);
        if (ms < 0) break;
        if (ms > last + 5) raised++;
        last = ms;
        assert.ok(performance.now() - stoppedAt < LEASE + 600, 'still held well past one lease after stopRefresh');
        await sleep(40);
      }
      assert.ok(raised <= 1, `renewed ${raised} times after stopRefresh`);
      if (!held.signal.aborted) await new Promise((r) => held.signal.addEventListener('abort', r, { once: true }));
      assert.equal((held.signal.reason as LockLostError).reason, 'expired');
      await assert.rejects(held.release(), { code: 'LOCK_NOT_HELD' });
    });
  }

  test('extend() still sets the lease after stopRefresh; a fixed lease has nothing to stop', async () => {
    const { holdfast } = await ctx.open({ watchdogLease: LEASE, watchdogInterval: 200 });
    const held = await holdfast.lock('sr-extend').acquire();
    held.stopRefresh();
    await held.extend(3000);
    await sleep(LEASE + 300);
    assert.equal(held.signal.aborted, false);
    assert.ok((await holdfast.lock('sr-extend').remainingTtl())! > 1000);
    await held.release();
    const fixed = await holdfast.lock('sr-fixed').acquire({ lease: 5000 });
    assert.equal(fixed.refreshing, false);
    fixed.stopRefresh();
    await fixed.release();
    assert.equal(fixed.refreshing, false);
  });
});

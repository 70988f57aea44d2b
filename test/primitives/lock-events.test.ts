/**
 * Lock events: `waitUntilFree` (woken by a release in another process; bounded by the holder's lease when it
 * expires, which publishes nothing; never takes a wake from a local waiter) and `onRelease` (releases and
 * force-unlocks of a name, by any process, until unsubscribed).
 */
import assert from 'node:assert/strict';
import { fileURLToPath } from 'node:url';
import { test } from 'node:test';
import type { ReleaseEvent } from '../../src/index.js';
import { spawnWorker, waitForExit, waitForLine } from '../support/process.js';
import { describeEachAdapter, sleep } from '../support/suite.js';

const worker = fileURLToPath(new URL('./fixtures/lock-worker.ts', import.meta.url));

describeEachAdapter('Lock events', (ctx) => {
  test('waitUntilFree: at once when free, false at the timeout when held, the signal aborts it', async () => {
    const lock = ctx.holdfast.lock('ev-basic');
    assert.equal(await lock.waitUntilFree(), true);
    const held = await lock.acquire();
    const t0 = performance.now();
    assert.equal(await lock.waitUntilFree({ timeout: 200 }), false);
    assert.ok(performance.now() - t0 >= 195);
    assert.equal(await lock.waitUntilFree({ timeout: 0 }), false);
    const controller = new AbortController();
    const waiting = lock.waitUntilFree({ signal: controller.signal });
    controller.abort(new Error('stop'));
    await assert.rejects(waiting, /stop/);
    assert.equal(await lock.isLocked(), true, 'waiting never takes or frees the lock');
    await held.release();
    await assert.rejects(lock.waitUntilFree({ timeout: -1 }), RangeError);
    await assert.rejects(lock.waitUntilFree({ lease: 1 } as never), TypeError);
  });

  test('waitUntilFree across processes: woken by the other process release over pub/sub', async (t) => {
    if (ctx.adapter.inProcess && !ctx.requireServer(t, 'another OS process works on the same data (a worker connects by URL): an in-process store is reachable only from its own process')) return;
    const prefix = `ev${ctx.adapter.name}:`;
    const child = spawnWorker(worker, ['hold-release', ctx.adapter.name, ctx.urls[0]!, prefix, 'ev-proc', '600']);
    try {
      await waitForLine(child, /^held /);
      const { holdfast } = await ctx.open({ prefix });
      const lock = holdfast.lock('ev-proc');
      assert.equal(await lock.isLocked(), true);
      const t0 = performance.now();
      assert.equal(await lock.waitUntilFree({ timeout: 10_000 }), true);
      const took = performance.now() - t0;
      // released ~600 ms after "held"; the watchdog lease (1000 ms) is not what ended the wait
      assert.ok(took < 950, `took ${Math.round(took)} ms`);
      assert.equal(await waitForExit(child, 10_000), 0);
    } finally {
      child.kill('SIGKILL');
    }
  });

  test('waitUntilFree when the holder dies: an expiry publishes nothing, the wait is bounded by the remaining lease', async (t) => {
    if (ctx.adapter.inProcess && !ctx.requireServer(t, 'another OS process works on the same data (a worker connects by URL): an in-process store is reachable only from its own process')) return;
    const prefix = `evx${ctx.adapter.name}:`;
    const child = spawnWorker(worker, ['hold', ctx.adapter.name, ctx.urls[0]!, prefix, 'ev-exp', '800']);
    try {
      await waitForLine(child, /^held /);
      child.kill('SIGKILL');
      const { holdfast } = await ctx.open({ prefix });
      const lock = holdfast.lock('ev-exp');
      const heard: ReleaseEvent[] = [];
      const unsubscribe = await holdfast.onRelease('ev-exp', (e) => heard.push(e));
      const ttl = (await lock.remainingTtl())!;
      const t0 = performance.now();
      assert.equal(await lock.waitUntilFree({ timeout: 10_000 }), true);
      const took = performance.now() - t0;
      assert.ok(took <= ttl + 300, `took ${Math.round(took)} ms for a ${ttl} ms lease`);
      assert.deepEqual(heard, [], 'an expiry is not reported as a release');
      unsubscribe();
    } finally {
      child.kill('SIGKILL');
    }
  });

  test('waitUntilFree takes no wake from a local waiter that wants the lock', async () => {
    const lock = ctx.holdfast.lock('ev-nosteal');
    const held = await lock.acquire();
    const acquirer = lock.acquire({ timeout: 10_000 });
    const watcher = lock.waitUntilFree({ timeout: 10_000 });
    await sleep(150);
    const t0 = performance.now();
    await held.release();
    const next = await acquirer;
    assert.ok(performance.now() - t0 < 500, 'the acquirer was woken by the release');
    assert.equal(await watcher, true, 'the watcher heard the release too');
    await next.release();
  });

  test('onRelease: releases and force-unlocks from another process, until unsubscribed', async (t) => {
    if (ctx.adapter.inProcess && !ctx.requireServer(t, 'another OS process works on the same data (a worker connects by URL): an in-process store is reachable only from its own process')) return;
    const prefix = `evr${ctx.adapter.name}:`;
    const { holdfast } = await ctx.open({ prefix });
    const heard: ReleaseEvent[] = [];
    const unsubscribe = await holdfast.onRelease('ev-rel', (e) => heard.push(e));
    const child = spawnWorker(worker, ['hold-release', ctx.adapter.name, ctx.urls[0]!, prefix, 'ev-rel', '100']);
    assert.equal(await waitForExit(child, 20_000), 0);
    await sleep(100);
    assert.deepEqual(heard, [{ name: 'ev-rel', kind: 'release' }]);
    const other = await ctx.open({ prefix });
    await other.holdfast.lock('ev-rel').acquire();
    await holdfast.lock('ev-rel').forceUnlock();
    await sleep(100);
    assert.deepEqual(heard[1], { name: 'ev-rel', kind: 'force-unlock' });
    unsubscribe();
    unsubscribe(); // idempotent
    await (await other.holdfast.lock('ev-rel').acquire()).release();
    await sleep(100);
    assert.equal(heard.length, 2);
    await assert.rejects(holdfast.onRelease('ev-rel', 5 as never), TypeError);
    assert.throws(() => holdfast.onRelease('', () => {}), RangeError); // a bad name throws at once, as holdfast.lock('') does
  });
});

/**
 * `waitUntilFree` and `onRelease` on the fair lock and the read-write lock, across two clients and two OS processes:
 * woken by a release of another process (the holder's lease is long, so only the release can end the wait in time),
 * what "free" means for each (a fair lock's hand-off is a release heard; a read-write lock is free with neither a
 * writer nor readers; the read side waits for a reader to be let in), and the events marker: releases publish on the
 * events channel only while someone observes.
 */
import assert from 'node:assert/strict';
import { connect } from 'node:net';
import { fileURLToPath } from 'node:url';
import { test } from 'node:test';
import type { ReleaseEvent } from '../../src/index.js';
import { spawnWorker, waitForExit, waitForLine } from '../support/process.js';
import { rawCommand } from '../support/redis-server.js';
import { describeEachAdapter, sleep } from '../support/suite.js';

const worker = fileURLToPath(new URL('./fixtures/lock-worker.ts', import.meta.url));

/** Waits until `events` has `n` entries (they arrive asynchronously), failing after 10 s; then a moment for extras. */
async function heardAll(events: unknown[], n: number): Promise<void> {
  const until = performance.now() + 10_000;
  while (events.length < n && performance.now() < until) await sleep(20);
  await sleep(100);
}

/** A raw subscriber (no client library): collects the messages published on `channel`. */
async function rawSubscribe(port: number, channel: string): Promise<{ messages: string[]; close: () => void }> {
  const socket = connect(port, '127.0.0.1');
  const messages: string[] = [];
  let buffer = '';
  let subscribed: () => void;
  const ready = new Promise<void>((resolve) => (subscribed = resolve));
  socket.on('data', (chunk) => {
    buffer += chunk.toString();
    // RESP2 pushes: *3 $9 subscribe $<n> <channel> :1, then *3 $7 message $<n> <channel> $<n> <payload>
    const parts = buffer.split('\r\n');
    messages.length = 0;
    for (let i = 0; i + 6 < parts.length; i++) {
      if (parts[i] === '*3' && parts[i + 2] === 'message') messages.push(parts[i + 6]!);
    }
    if (parts.includes('subscribe')) subscribed();
  });
  socket.write(`SUBSCRIBE ${channel}\r\n`);
  await ready;
  return { messages, close: () => socket.destroy() };
}

describeEachAdapter('FairLock and ReadWriteLock events', (ctx) => {
  test('FairLock.waitUntilFree: at once when free, false at the timeout, never queues; the signal aborts it', async () => {
    const lock = ctx.holdfast.fairLock('fev-basic');
    assert.equal(await lock.waitUntilFree(), true);
    const held = await lock.acquire();
    assert.equal(await lock.waitUntilFree({ timeout: 150 }), false);
    assert.equal(await lock.waitUntilFree({ timeout: 0 }), false);
    const controller = new AbortController();
    const waiting = lock.waitUntilFree({ signal: controller.signal });
    controller.abort(new Error('stop'));
    await assert.rejects(waiting, /stop/);
    const info = await lock.inspect();
    assert.equal(info.owner, held.owner, 'waiting never takes the lock');
    assert.equal(info.queueLength, 0, 'nor queues for it');
    await held.release();
    await assert.rejects(lock.waitUntilFree({ timeout: -1 }), RangeError);
    await assert.rejects(lock.onRelease('x' as never), TypeError);
  });

  test('FairLock across processes: woken by the release over pub/sub; onRelease hears it; a hand-off is a release', async (t) => {
    if (ctx.adapter.inProcess && !ctx.requireServer(t, 'another OS process works on the same data (a worker connects by URL): an in-process store is reachable only from its own process')) return;
    const prefix = `fev${ctx.adapter.name}:`;
    const { holdfast } = await ctx.open({ prefix });
    const lock = holdfast.fairLock('fev-proc');
    const heard: ReleaseEvent[] = [];
    const unsubscribe = await lock.onRelease((e) => heard.push(e));
    // a 60 s fixed lease: only the release can end the wait within its 20 s
    const child = spawnWorker(worker, ['hold-release-fair', ctx.adapter.name, ctx.urls[0]!, prefix, 'fev-proc', '400', '60000']);
    try {
      await waitForLine(child, /^held /);
      assert.equal(await lock.isLocked(), true);
      assert.equal(await lock.waitUntilFree({ timeout: 20_000 }), true);
      assert.equal(await waitForExit(child, 10_000), 0);
      await heardAll(heard, 1);
      assert.deepEqual(heard, [{ name: 'fev-proc', kind: 'release' }]);
      // a release that hands the lock to a queued waiter: never free, but the release is heard
      const other = await ctx.open({ prefix });
      const first = await other.holdfast.fairLock('fev-proc').acquire({ lease: 60_000 });
      const next = lock.acquire({ timeout: 20_000 });
      while ((await lock.inspect()).queueLength < 1) await sleep(10);
      const watcher = lock.waitUntilFree({ timeout: 20_000 });
      await sleep(50);
      await first.release();
      assert.equal(await watcher, true);
      const second = await next;
      await holdfast.fairLock('fev-proc').forceUnlock();
      await heardAll(heard, 3);
      assert.deepEqual(heard.slice(1), [
        { name: 'fev-proc', kind: 'release' },
        { name: 'fev-proc', kind: 'force-unlock' },
      ]);
      assert.equal(await lock.isLocked(), false);
      await assert.rejects(second.release(), { code: 'LOCK_NOT_HELD' });
      unsubscribe();
    } finally {
      child.kill('SIGKILL');
    }
  });

  test('FairLock: releases publish on the events channel only while someone observes (the events marker)', async (t) => {
    if (!ctx.requireRedis(t, 'subscribes to the events channel over a raw Redis connection and reads the marker key with EXISTS and PTTL')) return;
    const { holdfast } = await ctx.open({ prefix: `fevm${ctx.adapter.name}:` });
    const keys = holdfast.core.keys;
    const raw = await rawSubscribe(ctx.server.port, keys.fairEvents('fev-m'));
    try {
      await (await holdfast.fairLock('fev-m').acquire()).release();
      await sleep(100);
      assert.deepEqual(raw.messages, [], 'nobody observes: nothing published');
      assert.equal(await rawCommand(ctx.server.port, `EXISTS ${keys.fairObserved('fev-m')}`), ':0');
      const stop = await holdfast.fairLock('fev-m').onRelease(() => {});
      const pttl = Number((await rawCommand(ctx.server.port, `PTTL ${keys.fairObserved('fev-m')}`)).slice(1));
      assert.ok(pttl > 0, `the marker has a TTL (${pttl})`);
      await (await holdfast.fairLock('fev-m').acquire()).release();
      await heardAll(raw.messages, 1);
      assert.deepEqual(raw.messages, ['1']);
      stop();
    } finally {
      raw.close();
    }
  });

  test('ReadWriteLock.waitUntilFree across processes: readers of another process; free = neither a writer nor readers', async (t) => {
    if (ctx.adapter.inProcess && !ctx.requireServer(t, 'another OS process works on the same data (a worker connects by URL): an in-process store is reachable only from its own process')) return;
    const prefix = `rwev${ctx.adapter.name}:`;
    const { holdfast } = await ctx.open({ prefix });
    const rw = holdfast.readWriteLock('rwev');
    const heard: ReleaseEvent[] = [];
    const unsubscribe = await rw.onRelease((e) => heard.push(e));
    const child = spawnWorker(worker, ['hold-release-read', ctx.adapter.name, ctx.urls[0]!, prefix, 'rwev', '400', '60000']);
    try {
      await waitForLine(child, /^held /);
      assert.equal(await rw.readLock().waitUntilFree({ timeout: 0 }), true, 'a reader would be let in beside a reader');
      assert.equal(await rw.writeLock().waitUntilFree({ timeout: 100 }), false);
      assert.equal(await rw.waitUntilFree({ timeout: 20_000 }), true);
      assert.equal(await waitForExit(child, 10_000), 0);
      await heardAll(heard, 1);
      assert.deepEqual(heard, [{ name: 'rwev', kind: 'release', side: 'read' }]);
      unsubscribe();
    } finally {
      child.kill('SIGKILL');
    }
  });

  test('ReadWriteLock: a write release that leaves a downgraded reader is not free; the reader release is', async () => {
    const { holdfast } = await ctx.open({ prefix: `rwdg${ctx.adapter.name}:` });
    const { holdfast: other } = await ctx.open({ prefix: `rwdg${ctx.adapter.name}:` });
    const rw = holdfast.readWriteLock('rwdg');
    const heard: ReleaseEvent[] = [];
    const unsubscribe = await other.readWriteLock('rwdg').onRelease((e) => heard.push(e));
    const w = await rw.writeLock().acquire({ lease: 60_000 });
    const r = await w.downgrade({ lease: 60_000 }); // takes the read lock, releases the write lock
    await heardAll(heard, 1);
    assert.deepEqual(heard, [{ name: 'rwdg', kind: 'release', side: 'write' }]);
    assert.equal(await other.readWriteLock('rwdg').waitUntilFree({ timeout: 200 }), false, 'the downgraded reader holds it');
    const watcher = other.readWriteLock('rwdg').waitUntilFree({ timeout: 20_000 });
    await sleep(50);
    await r.release();
    assert.equal(await watcher, true);
    await rw.writeLock().acquire({ lease: 60_000 });
    assert.equal(await rw.forceUnlock(), true);
    await heardAll(heard, 3);
    assert.deepEqual(heard.slice(1), [
      { name: 'rwdg', kind: 'release', side: 'read' },
      { name: 'rwdg', kind: 'force-unlock' },
    ]);
    unsubscribe();
  });

  test('ReadLock.waitUntilFree: waits while a writer holds or waits; woken by the writer of another process', async (t) => {
    if (ctx.adapter.inProcess && !ctx.requireServer(t, 'another OS process works on the same data (a worker connects by URL): an in-process store is reachable only from its own process')) return;
    const prefix = `rwr${ctx.adapter.name}:`;
    const { holdfast } = await ctx.open({ prefix });
    const rw = holdfast.readWriteLock('rwr');
    const child = spawnWorker(worker, ['hold-release-write', ctx.adapter.name, ctx.urls[0]!, prefix, 'rwr', '400', '60000']);
    try {
      await waitForLine(child, /^held /);
      assert.equal(await rw.readLock().waitUntilFree({ timeout: 100 }), false, 'a writer holds it');
      assert.equal(await rw.readLock().waitUntilFree({ timeout: 20_000 }), true);
      assert.equal(await waitForExit(child, 10_000), 0);
    } finally {
      child.kill('SIGKILL');
    }
    // a waiting writer keeps new readers out: the read side is not free, though only a reader holds it
    const reader = await rw.readLock().acquire({ lease: 60_000 });
    const { holdfast: other } = await ctx.open({ prefix });
    const writer = other.readWriteLock('rwr').writeLock().acquire({ timeout: 20_000 });
    while ((await rw.inspect()).waitingWriters < 1) await sleep(10);
    assert.equal(await rw.readLock().waitUntilFree({ timeout: 150 }), false);
    const watcher = rw.readLock().waitUntilFree({ timeout: 20_000 });
    await reader.release();
    const w = await writer;
    await sleep(50);
    await w.release();
    assert.equal(await watcher, true);
  });
});

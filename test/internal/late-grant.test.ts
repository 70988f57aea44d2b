/**
 * The grant rule of the hold engine: a grant whose reply comes past its lease (send time + lease − drift) is no grant.
 * It is undone and the wait goes on: `acquire()` never resolves a hold that is already past its deadline, nor one
 * another client holds meanwhile. On every client, with the reply held back by a proxy and with Redis SIGSTOPped.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import type { Holdfast } from '../../src/index.js';
import { FaultProxy } from '../support/fault-proxy.js';
import { describeEachAdapter, sleep } from '../support/suite.js';

const LEASE = 400;

describeEachAdapter('A grant that comes past its lease', (ctx) => {
  let proxy: FaultProxy;
  let a: Holdfast;
  before(async () => {
    proxy = await FaultProxy.start(ctx.server.port);
    // A talks through the proxy, B directly; the same prefix, so they contend for the same keys
    a = (await ctx.open({ prefix: 'late:' }, proxy.url)).holdfast;
  });
  after(async () => {
    await proxy.close();
  });

  test('a reply held back past the lease: A waits while B holds, and never resolves an expired hold', async () => {
    const b = (await ctx.open({ prefix: 'late:' })).holdfast;
    await (await a.lock('warm').acquire()).release(); // the client's one-time checks, before the delay
    const name = `held-back-${ctx.adapter.name}`;
    proxy.delay('down', 1000); // A's first reply arrives ~1000 ms after the request: its 400 ms lease is over by then
    const sent = performance.now();
    let bReleased = false;
    // what A was handed, judged the moment acquire() resolves
    let seenAtResolve: { bReleased: boolean; aborted: boolean } | undefined;
    const acquired = a.lock(name).acquire({ lease: LEASE }).then((h) => {
      seenAtResolve = { bReleased, aborted: h.signal.aborted };
      return h;
    });
    // A's request reaches Redis (its reply is held back); B takes the lock once A's grant has lapsed, and holds it
    while ((await b.lock(name).inspect()).owner === null) await sleep(5);
    let bHeld = null;
    while (!bHeld) {
      bHeld = await b.lock(name).tryAcquire({ lease: 10_000 });
      if (!bHeld) await sleep(20);
    }
    const tookB = performance.now() - sent;
    assert.ok(tookB < 1000, `B got the lock at ${tookB.toFixed(0)} ms, before A's reply arrived`);
    proxy.delay('down', 0); // A's held-back reply keeps its due time; later replies come at once
    await sleep(1500 - (performance.now() - sent));
    // from the moment B's release is sent, A may get the lock: its wake-up and its grant can overtake B's own reply
    // (another connection), so "released" is marked before the release, not after its promise settles
    bReleased = true;
    await bHeld.release();
    const held = await acquired;
    assert.deepEqual(seenAtResolve, { bReleased: true, aborted: false }, 'A resolved while B held the lock');
    assert.ok(held.token > bHeld.token, `A's token ${held.token} is newer than B's ${bHeld.token}`);
    assert.equal((await b.lock(name).inspect()).owner, held.owner);
    await held.release();
  });

  test('Redis SIGSTOPped past the lease: the hold A gets is one Redis keeps for it', async () => {
    const b = (await ctx.open({ prefix: 'late:' })).holdfast;
    await (await a.lock('warm').acquire()).release();
    const name = `stopped-${ctx.adapter.name}`;
    ctx.server.pause();
    let held;
    try {
      const acquired = a.lock(name).acquire({ lease: LEASE });
      await sleep(700); // A's request waits in the stopped server: its reply comes ~700 ms after it was sent
      ctx.server.resume();
      held = await acquired;
    } finally {
      if (ctx.server.paused) ctx.server.resume();
    }
    // before the rule, the late grant resolved and its signal aborted one timer turn later
    await sleep(20);
    assert.equal(held.signal.aborted, false, 'A was handed a hold already past its deadline');
    assert.equal((await b.lock(name).inspect()).owner, held.owner);
    assert.equal(await b.lock(name).tryAcquire(), null);
    await held.release();
  });
}, { requiresServer: 'holds back replies with a fault proxy in front of a redis-server, and pauses the server with SIGSTOP' });

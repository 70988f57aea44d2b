import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { StaleTokenError, type Holdfast } from '../../src/index.js';
import { makeHoldfast, serverAdapter } from '../support/clients.js';
import { RedisServer } from '../support/redis-server.js';
import { describeEachAdapter, sleep } from '../support/suite.js';
import { startWorker } from '../primitives/fixtures/spawn.js';

// The per-adapter suites have servers of their own; this one serves the describes outside them.
let server: RedisServer;
before(async () => {
  server = await RedisServer.start();
});
after(async () => {
  await server.stop();
});

describeEachAdapter('fencing against a Redis key', (ctx) => {
  let a: Holdfast;
  let b: Holdfast;
  before(async () => {
    // two clients on two connections sharing one prefix: two "processes" contending for one lock
    a = ctx.holdfast;
    b = (await ctx.open({ prefix: a.settings.prefix })).holdfast;
  });

  void it('the classic failure: A pauses past its lease, B writes, A wakes and its stale write is rejected', async () => {
    const lockA = await a.lock('account').acquire({ lease: 300 });
    const aLost = new Promise((resolve) => lockA.signal.addEventListener('abort', resolve));
    await a.fencedKey('account').set('balance=100 (A, first write)', lockA.token);

    await sleep(450); // A "pauses" (a GC stop, a slow disk): its lease runs out meanwhile

    const lockB = await b.lock('account').acquire({ timeout: 1000 });
    assert.ok(lockB.token > lockA.token, 'B gets a newer token');
    await b.fencedKey('account').set('balance=70 (B)', lockB.token);

    // A wakes up and, unaware, writes: the resource turns it away
    await assert.rejects(a.fencedKey('account').set('balance=50 (A, stale)', lockA.token), (e: unknown) => {
      assert.ok(e instanceof StaleTokenError);
      assert.equal(e.code, 'STALE_TOKEN');
      assert.equal(e.token, lockA.token);
      assert.equal(e.current, lockB.token);
      return true;
    });
    assert.equal(await a.fencedKey('account').trySet('x', lockA.token), false);
    assert.deepEqual(await b.fencedKey('account').get(), { value: 'balance=70 (B)', token: lockB.token });
    await aLost; // and A's signal had told it so
    await lockB.release();
  });

  void it('accepts repeated writes of the same holder, and a delete keeps the token', async () => {
    const fk = a.fencedKey('doc');
    assert.deepEqual(await fk.get(), { value: null, token: 0 });
    await fk.set('v1', 5);
    await fk.set('v2', 5);
    await fk.set('v3', 7, { ttl: 60_000 });
    await fk.delete(7);
    assert.deepEqual(await fk.get(), { value: null, token: 7 });
    await assert.rejects(fk.set('stale', 6), StaleTokenError);
    await assert.rejects(fk.delete(6), StaleTokenError);
  });

  void it('rejects bad input before any Redis call', async () => {
    assert.throws(() => a.fencedKey(''), RangeError);
    const fk = a.fencedKey('bad');
    await assert.rejects(fk.set(5 as never, 1), TypeError);
    await assert.rejects(fk.set('v', 0), RangeError);
    await assert.rejects(fk.set('v', 1.5), RangeError);
    await assert.rejects(fk.set('v', '3' as never), TypeError);
    await assert.rejects(fk.set('v', 1, { ttl: -1 }), RangeError);
    await assert.rejects(fk.set('v', 1, { px: 1 } as never), TypeError);
    await assert.rejects(fk.delete(-1), RangeError);
  });
}, { notOnPostgres: 'the fenced key is a Redis value: on PostgreSQL the data lives in the database, fenced by the token in its own transaction' });

void describe('fencing against a Redis key, across processes', () => {
  void it('a SIGSTOPped holder resumes after B took over: its stale write is rejected', async () => {
    const { holdfast, dispose } = await makeHoldfast(serverAdapter, server.url);
    const a = startWorker('fenced-writer', server.url, holdfast.settings.prefix, 'ledger', 400, 150);
    try {
      const held = await a.next('held');
      a.child.kill('SIGSTOP'); // A freezes inside its critical section
      await sleep(700); // past A's 400 ms lease
      const lockB = await holdfast.lock('ledger').acquire({ timeout: 1000 });
      assert.ok(lockB.token > Number(held.token));
      await holdfast.fencedKey('ledger').set('written by B', lockB.token);
      a.child.kill('SIGCONT');
      const done = await a.next('done', 10_000);
      assert.equal(done.rejected, true);
      assert.equal(done.code, 'STALE_TOKEN');
      assert.deepEqual(await holdfast.fencedKey('ledger').get(), { value: 'written by B', token: lockB.token });
      await lockB.release();
    } finally {
      a.child.kill('SIGCONT');
      await a.kill();
      await dispose();
    }
  });
});

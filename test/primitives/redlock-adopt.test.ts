/**
 * Redlock adopt by owner id over 5 independent redis-server processes: a second OS process takes over a Redlock
 * acquired elsewhere (same token, no second hold, renewal taken over on every node); it succeeds only while a
 * majority holds the key for that owner, with validity computed as for acquire.
 */
import assert from 'node:assert/strict';
import { fileURLToPath } from 'node:url';
import { it } from 'node:test';
import { LockNotHeldError, QuorumNotReachedError } from '../../src/index.js';
import { rawCommand, type RedisServer } from '../support/redis-server.js';
import { spawnWorker, waitForLine } from '../support/process.js';
import { redlockNodes } from '../support/redlock.js';
import { describeEachAdapter, sleep } from '../support/suite.js';

const N = 5;
const worker = fileURLToPath(new URL('./fixtures/redlock-worker.ts', import.meta.url));

/** The lock value on one node (raw socket: no client library involved), or null. */
async function valueOn(server: RedisServer, key: string): Promise<string | null> {
  const reply = await rawCommand(server.port, `EVAL "return {ok = redis.call('get', KEYS[1]) or '-'}" 1 ${key}`);
  return reply === '+-' ? null : reply.slice(1);
}

describeEachAdapter(`Redlock.adopt over ${N} masters`, (ctx) => {
  const { make } = redlockNodes(ctx, 'rla');

  void it('across processes: same token, no second hold; the watchdog is taken over on every node after the holder dies', async (t) => {
    if (!ctx.requireServer(t, 'another OS process works on the same data (a worker connects by URL): an in-process store is reachable only from its own process')) return;
    const prefix = `rlx${ctx.adapter.name}:`;
    const child = spawnWorker(worker, ['hold', ctx.adapter.name, prefix, 'job', ctx.servers.map((s) => s.url).join(',')]);
    try {
      const [, tokenText, owner] = (await waitForLine(child, /^held /)).split(' ');
      const token = Number(tokenText);
      const redlock = make({ prefix, watchdogLease: 1000, watchdogInterval: 250, nodeTimeout: 1000 });
      const held = await redlock.lock('job').adopt(owner!);
      assert.equal(held.token, token);
      assert.equal(held.owner, owner);
      assert.equal(held.holdCount, 1);
      assert.equal(held.refreshing, true);
      assert.ok(held.validity > 0 && held.validity <= 1000);
      assert.equal(held.nodes.filter((n) => n.status === 'acquired').length, N);
      const key = redlock.keys.lock('job');
      for (const s of ctx.servers) assert.match((await valueOn(s, key)) ?? '', new RegExp(`^1:\\d+:${owner}$`), 'one hold on every node');
      child.kill('SIGKILL');
      await sleep(2000); // two of the dead holder's leases
      assert.equal(held.signal.aborted, false);
      for (const s of ctx.servers) assert.match((await valueOn(s, key)) ?? '', new RegExp(`:${owner}$`), 'kept alive by the adopter');
      assert.equal(await make({ prefix }).lock('job').tryAcquire({ lease: 1000 }), null);
      await held.release();
      for (const s of ctx.servers) assert.equal(await valueOn(s, key), null);
    } finally {
      child.kill('SIGKILL');
    }
  });

  void it('a minority down: adopts from the majority that holds it; a fixed lease is set at once', async (t) => {
    if (!ctx.requireServer(t, 'pauses, kills or restarts a redis-server process')) return;
    const first = make();
    const held = await first.lock('min').acquire({ lease: 10_000 });
    const second = make({ prefix: first.keys.prefix, nodeTimeout: 150 });
    ctx.servers[3]!.pause();
    ctx.servers[4]!.pause();
    try {
      const adopted = await second.lock('min').adopt(held.owner, { lease: 3000 });
      assert.equal(adopted.token, held.token);
      assert.equal(adopted.refreshing, false);
      assert.equal(adopted.nodes.filter((n) => n.status === 'error').length, 2);
      const pttl = Number((await rawCommand(ctx.servers[0]!.port, `PTTL ${first.keys.lock('min')}`)).slice(1));
      assert.ok(pttl > 0 && pttl <= 3000, `lease set to ${pttl}`);
      await adopted.release();
    } finally {
      ctx.servers[3]!.resume();
      ctx.servers[4]!.resume();
    }
    // the two nodes that missed the release still hold the key until its lease runs out; nodes 0-2 are free
    await assert.rejects(held.release(), LockNotHeldError);
  });

  void it('the key lost on a majority: refused with LockNotHeldError, and no node is taken back', async () => {
    const first = make();
    const held = await first.lock('maj').acquire({ lease: 10_000 });
    const key = first.keys.lock('maj');
    for (const s of ctx.servers.slice(0, 3)) await rawCommand(s.port, `DEL ${key}`);
    const second = make({ prefix: first.keys.prefix });
    const error = await second
      .lock('maj')
      .adopt(held.owner)
      .then(
        () => assert.fail('adopted a lock a majority does not hold'),
        (e: unknown) => e,
      );
    assert.ok(error instanceof LockNotHeldError, String(error));
    for (const s of ctx.servers.slice(0, 3)) assert.equal(await valueOn(s, key), null, 'the adoption takes no key back');
    await held.release().catch(() => {});
  });

  void it('a majority unreachable: QuorumNotReachedError (adopt), never a false success', async (t) => {
    if (!ctx.requireServer(t, 'pauses, kills or restarts a redis-server process')) return;
    const first = make();
    const held = await first.lock('down').acquire({ lease: 10_000 });
    const second = make({ prefix: first.keys.prefix, nodeTimeout: 100 });
    ctx.servers.slice(0, 3).forEach((s) => s.pause());
    try {
      const error = await second
        .lock('down')
        .adopt(held.owner)
        .then(
          () => assert.fail('a false success'),
          (e: unknown) => e,
        );
      assert.ok(error instanceof QuorumNotReachedError, String(error));
      assert.equal(error.operation, 'adopt');
      assert.equal(error.nodes.filter((n) => n.status === 'error').length, 3);
      assert.equal(error.nodes.filter((n) => n.status === 'acquired').length, 2);
    } finally {
      ctx.servers.slice(0, 3).forEach((s) => s.resume());
    }
    await held.release();
  });

  void it('a slow node eats the validity: a majority holds it, still no adoption', async (t) => {
    if (!ctx.requireServer(t, 'pauses, kills or restarts a redis-server process (SIGSTOP makes a node slow)')) return;
    const first = make();
    const held = await first.lock('slow').acquire({ lease: 10_000 });
    const second = make({ prefix: first.keys.prefix, nodeTimeout: 150 });
    ctx.servers[4]!.pause();
    try {
      const error = await second
        .lock('slow')
        .adopt(held.owner, { lease: 100 })
        .then(
          () => assert.fail('an adoption with no validity left'),
          (e: unknown) => e,
        );
      assert.ok(error instanceof QuorumNotReachedError, String(error));
      assert.match(error.message, /no validity left/);
    } finally {
      ctx.servers[4]!.resume();
    }
    await held.release().catch(() => {});
  });

  void it('another owner, bad input, a closed Redlock', async () => {
    const first = make();
    const held = await first.lock('who').acquire({ lease: 5000 });
    const second = make({ prefix: first.keys.prefix });
    await assert.rejects(second.lock('who').adopt('someone-else'), LockNotHeldError);
    await assert.rejects(second.lock('who').adopt(''), RangeError);
    await assert.rejects(second.lock('who').adopt(42 as never), TypeError);
    await assert.rejects(second.lock('who').adopt(held.owner, { lease: 5 }), RangeError);
    await assert.rejects(second.lock('who').adopt(held.owner, { timeout: 1 } as never), TypeError);
    // in the Redlock that holds it, adopt joins the hold; a Redlock is held once, so one release frees it
    const joined = await first.lock('who').adopt(held.owner);
    assert.equal(joined.token, held.token);
    await joined.release();
    assert.ok(await second.lock('who').tryAcquire({ lease: 1000 }));
    await assert.rejects(held.release(), LockNotHeldError);
    await second.close();
    await assert.rejects(second.lock('who').adopt(held.owner), { code: 'CLIENT_CLOSED' });
  });
}, { servers: N, notOnPostgres: 'Redlock runs on a quorum of independent Redis servers: it has no meaning on one PostgreSQL' });

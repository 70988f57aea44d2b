/**
 * holdfast/memory's own contract (the primitives themselves run through the suites, as the 'memory' adapter): Redis'
 * conversions between Lua and replies, Lua 5.1 numbers, error replies, one store shared by two clients, the store's
 * clock, close(), a process that exits by itself, and an entry point that `holdfast` does not load.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { describe, it } from 'node:test';
import { Holdfast, LockLostError } from '../../src/index.js';
import { memoryRedis, memoryStore, serveMemoryStore } from '../../src/memory/index.js';
import { Redis } from 'ioredis';

describe('holdfast/memory: scripts as Redis runs them', () => {
  const redis = memoryRedis();
  const run = (script: string, keys: string[] = [], args: (string | number)[] = []) => redis.eval(script, keys, args);

  it('converts replies as Redis does', async () => {
    assert.equal(await run('return 3.9'), 3, 'a number is truncated to an integer');
    assert.equal(await run('return -3.9'), -3);
    assert.equal(await run('return true'), 1);
    assert.equal(await run('return false'), null);
    assert.equal(await run('return nil'), null);
    assert.deepEqual(await run("return {1, 'a', false, 'b'}"), [1, 'a', null, 'b'], 'false in an array is nil');
    assert.deepEqual(await run("return {1, nil, 'b'}"), [1], 'an array ends at its first nil');
    assert.equal(await run("return {ok = 'FINE'}"), 'FINE');
    await assert.rejects(run("return {err = 'MYERR bad'}"), { message: /^MYERR bad/ });
    assert.equal(await run("return redis.call('set', KEYS[1], 'v')['ok']", ['k']), 'OK');
    assert.equal(await run("return redis.call('get', 'missing')"), null, 'a nil reply is false in Lua');
  });

  it("numbers are Lua 5.1's: doubles that print without '.0', past 32 bits", async () => {
    assert.equal(await run("return 'x' .. tonumber(ARGV[1])", [], ['5']), 'x5');
    assert.equal(await run("return tostring(tonumber(ARGV[1]) * 1000 + math.floor(999 / 1000))", [], ['1764170000']), '1764170000000');
    assert.equal(await run("return redis.call('incrby', KEYS[1], ARGV[1]) .. ''", ['n'], ['4000000000']), '4000000000');
    assert.equal(await run("return tostring(10 / 4)"), '2.5');
    assert.equal(await run("local t = redis.call('time') return tonumber(t[1]) * 1000"), Math.floor(Date.now() / 1000) * 1000);
    assert.equal(await run('return unpack({7, 8})'), 7, 'unpack is a global, as in 5.1');
  });

  it("error replies carry Redis' messages", async () => {
    await run("redis.call('set', KEYS[1], 'str')", ['s']);
    await assert.rejects(run("return redis.call('hget', KEYS[1], 'f')", ['s']), (e: Error) => e.name === 'ReplyError' && /^WRONGTYPE /.test(e.message));
    assert.deepEqual(await run("local r = redis.pcall('incr', KEYS[1]) return r['err']", ['s']), 'ERR value is not an integer or out of range');
    await assert.rejects(run("error('boom')"), { message: /^ERR user_script:1: boom/ });
    await assert.rejects(redis.evalsha('0'.repeat(40), [], []), { message: /^NOSCRIPT / });
    await assert.rejects(run('this is not lua'), { message: /^ERR Error compiling script/ });
    await assert.rejects(redis.command(['NOSUCH', 'x']), { message: /^ERR unknown command 'NOSUCH'/ });
  });

  it('a key expires in real time (PX), and PTTL counts down', async () => {
    assert.equal(await redis.command(['SET', 'e', '1', 'NX', 'PX', '80']), 'OK');
    assert.equal(await redis.command(['SET', 'e', '2', 'NX', 'PX', '80']), null);
    const pttl = Number(await redis.command(['PTTL', 'e']));
    assert.ok(pttl > 0 && pttl <= 80, `pttl ${pttl}`);
    await new Promise((r) => setTimeout(r, 120));
    assert.equal(await redis.command(['GET', 'e']), null);
    assert.equal(await redis.command(['PTTL', 'e']), -2);
  });

  it('close() ends the connection and frees its own store', async () => {
    const other = memoryRedis();
    await other.command(['SET', 'a', '1']);
    await other.close();
    assert.equal(other.store.closed, true);
    await assert.rejects(other.command(['GET', 'a']), { message: /closed/ });
    await redis.close();
  });
});

describe('holdfast/memory: one store, two service instances', () => {
  it('a lock held by one is busy for the other; the other waits and is woken by the release', async () => {
    const store = memoryStore();
    const a = new Holdfast({ redis: memoryRedis({ store }), prefix: 'svc:' });
    const b = new Holdfast({ redis: memoryRedis({ store }), prefix: 'svc:' });
    try {
      const held = await a.lock('orders').acquire();
      assert.equal(await b.lock('orders').tryAcquire(), null);
      const t0 = performance.now();
      const waiting = b.lock('orders').acquire({ timeout: 5000 });
      setTimeout(() => void held.release(), 100);
      const next = await waiting;
      assert.ok(performance.now() - t0 < 1000, 'woken by the release, not by the lease');
      assert.ok(next.token > held.token, 'fencing tokens grow across instances');
      await next.release();
    } finally {
      await a.close();
      await b.close();
      store.close();
    }
  });

  it("store.advance(ms) runs a lease out: another instance takes the lock, the holder's signal aborts at its next renewal", async () => {
    const store = memoryStore();
    // keepAlive: the test awaits only a loss signal, which nothing else keeps the process alive for
    const ra = memoryRedis({ store, keepAlive: true });
    const a = new Holdfast({ redis: ra, prefix: 'adv:', watchdogLease: 30_000, watchdogInterval: 100 });
    const b = new Holdfast({ redis: memoryRedis({ store }), prefix: 'adv:' });
    try {
      const held = await a.lock('job').acquire();
      store.advance(31_000);
      const other = await b.lock('job').tryAcquire();
      assert.ok(other, 'the lease ran out in store time');
      await new Promise<void>((resolve) => held.signal.addEventListener('abort', () => resolve(), { once: true }));
      assert.ok(held.signal.reason instanceof LockLostError);
      await other.release();
    } finally {
      await a.close();
      await b.close();
      await ra.close();
      store.close();
    }
  });

  it('serveMemoryStore: another client library reaches the same store over a loopback port', async () => {
    const store = memoryStore();
    const server = await serveMemoryStore(store);
    const local = new Holdfast({ redis: memoryRedis({ store }), prefix: 'srv:' });
    const io = new Redis(server.url, { lazyConnect: true });
    try {
      await io.connect();
      const viaSocket = new Holdfast({ redis: io, prefix: 'srv:' });
      const held = await local.lock('x').acquire();
      assert.equal(await viaSocket.lock('x').isLocked(), true);
      await held.release();
      const h2 = await viaSocket.lock('x').acquire({ timeout: 1000 });
      assert.ok(h2.token > held.token);
      await h2.release();
      await viaSocket.close();
    } finally {
      io.disconnect();
      await local.close();
      await server.close();
      store.close();
    }
  });
});

describe('holdfast/memory: the process', () => {
  const child = (code: string) =>
    spawnSync(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', code], { cwd: process.cwd(), encoding: 'utf8', timeout: 20_000 });

  it('a process that uses only the memory backend exits by itself, even holding a lock (no close())', () => {
    const t0 = performance.now();
    const r = child(`
      import { Holdfast } from './src/index.ts';
      import { memoryRedis } from './src/memory/index.ts';
      const holdfast = new Holdfast({ redis: memoryRedis() });
      const held = await holdfast.lock('a').acquire();
      console.log('held', held.token);
    `);
    assert.equal(r.status, 0, r.stderr);
    assert.match(r.stdout, /held 1/);
    assert.ok(performance.now() - t0 < 15_000);
  });

  it("importing holdfast does not load the memory backend's Lua VM; holdfast/memory does", () => {
    const probe = (entry: string) =>
      child(`
        import { createRequire } from 'node:module';
        await import('${entry}');
        const cache = createRequire(import.meta.url).cache;
        console.log(Object.keys(cache).some((k) => k.includes('/node_modules/fengari/')) ? 'fengari' : 'none');
      `);
    const plain = probe('./src/index.ts');
    assert.equal(plain.status, 0, plain.stderr);
    assert.equal(plain.stdout.trim(), 'none');
    const memory = child(`
      import { createRequire } from 'node:module';
      const { memoryRedis } = await import('./src/memory/index.ts');
      await memoryRedis().eval('return 1', [], []);
      const cache = createRequire(import.meta.url).cache;
      console.log(Object.keys(cache).some((k) => k.includes('/node_modules/fengari/')) ? 'fengari' : 'none');
    `);
    assert.equal(memory.status, 0, memory.stderr);
    assert.equal(memory.stdout.trim(), 'fengari');
  });
});

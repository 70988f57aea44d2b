/**
 * How the node-redis adapter sends commands, against a real redis-server: scripts go as plain `EVALSHA` commands
 * without node-redis' own per-command timer (holdfast bounds every call with its own), and a server that stops
 * answering is still bounded by holdfast's `commandTimeout` — with nothing left behind without a lease once it answers
 * again.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { createClient } from 'redis';
import { Holdfast, isHoldfastError, nodeRedisTransport, toTransport } from '../../src/index.js';
import { freePort, RedisServer } from '../support/redis-server.js';
import { sleep } from '../support/suite.js';

const nodeRedis = (url: string) => createClient({ url, socket: { reconnectStrategy: (n: number) => Math.min(n * 50, 500) } });
type NodeRedis = ReturnType<typeof nodeRedis>;

let server: RedisServer;
const clients: NodeRedis[] = [];
async function connect(url = server.url): Promise<NodeRedis> {
  const client = nodeRedis(url);
  client.on('error', () => {});
  await client.connect();
  clients.push(client);
  return client;
}

before(async () => {
  server = await RedisServer.start();
});
after(async () => {
  for (const c of clients) c.destroy();
  await server.stop();
});

/** Counts the `AbortSignal.timeout` timers armed while `fn` runs (node-redis ≥ 5 arms one per command by default). */
async function timersArmed(fn: () => Promise<void>): Promise<number> {
  const original = AbortSignal.timeout.bind(AbortSignal);
  let armed = 0;
  AbortSignal.timeout = (ms: number): AbortSignal => {
    armed++;
    return original(ms);
  };
  try {
    await fn();
  } finally {
    AbortSignal.timeout = original;
  }
  return armed;
}

void describe('node-redis adapter', () => {
  void it('is chosen by duck typing', async () => {
    assert.equal(toTransport(await connect()).kind, 'node-redis');
    assert.equal(nodeRedisTransport(await connect()).kind, 'node-redis');
  });

  void it("sends holdfast's scripts without node-redis' per-command timer (a plain command through the client arms one)", async () => {
    const client = await connect();
    const holdfast = new Holdfast({ redis: client, prefix: 'nr-timer:' });
    try {
      await (await holdfast.lock('warm').acquire()).release(); // the eviction-policy check, the scripts loaded
      const armedByHoldfast = await timersArmed(async () => {
        for (let i = 0; i < 50; i++) {
          const held = await holdfast.lock(`order:${i}`).acquire({ lease: 5000 });
          assert.ok(held.token > 0);
          await held.release();
        }
        await holdfast.fairLock('fair').withLock(() => undefined);
        await holdfast.readWriteLock('rw').writeLock().withLock(() => undefined);
      });
      assert.equal(armedByHoldfast, 0, 'holdfast armed node-redis timers');
      const armedByClient = await timersArmed(async () => {
        await client.get('nr-timer:plain');
      });
      assert.equal(armedByClient, 1, "the client's own default (if this fails, node-redis no longer arms a timer per command, and the check above proves nothing)");
    } finally {
      await holdfast.close();
    }
  });

  void it('a script whose server does not answer rejects within commandTimeout; once it answers, no lock is left without a lease', async () => {
    const own = await RedisServer.start();
    const client = await connect(own.url);
    const holdfast = new Holdfast({ redis: client, prefix: 'nr-pause:', commandTimeout: 200 });
    const probe = await connect(own.url);
    try {
      await (await holdfast.lock('warm').acquire()).release();
      own.pause();
      const t0 = performance.now();
      await assert.rejects(holdfast.lock('stalled').acquire({ timeout: 0 }), (e: unknown) => isHoldfastError(e) && e.code === 'REDIS_CONNECTION');
      const took = performance.now() - t0;
      assert.ok(took < 1500, `rejected after ${took.toFixed(0)} ms`);
      await sleep(300);
      own.resume();
      // The acquisition was written before the pause ended and runs now: the lock it took is released by holdfast's
      // clean-up of a lost reply, or at least carries its lease. Never a key without a TTL.
      const key = 'nr-pause:{stalled}:lock';
      for (let i = 0; i < 50 && (await probe.exists(key)) === 1; i++) await sleep(20);
      const pttl = await probe.pTTL(key);
      assert.ok(pttl === -2 || pttl > 0, `the stalled acquisition's key has PTTL ${pttl}`);
      // and the client works again
      const held = await holdfast.lock('stalled').acquire({ timeout: 5000 });
      await held.release();
    } finally {
      own.resume();
      await holdfast.close();
      await own.stop();
    }
  });

  void it('a client never connected: the error says to call connect(); one reconnecting names its address', async () => {
    const idle = nodeRedis(`redis://:secret@127.0.0.1:${await freePort()}`);
    idle.on('error', () => {});
    const holdfast = new Holdfast({ redis: idle, commandTimeout: 400 });
    const never = await holdfast.lock('n').acquire().then(() => undefined, (e: unknown) => e);
    assert.ok(isHoldfastError(never) && never.code === 'REDIS_CONNECTION', String(never));
    assert.match(never.message, /the node-redis client is not open: call `await client\.connect\(\)`/);
    await holdfast.close();

    const own = await RedisServer.start();
    const client = await connect(own.url);
    const later = new Holdfast({ redis: client, commandTimeout: 400 });
    try {
      await own.stop();
      await sleep(100);
      const down = await later.lock('n').acquire().then(() => undefined, (e: unknown) => e);
      assert.ok(down instanceof Error);
      assert.match(down.message, new RegExp(`no reply from Redis within 400 ms \\(node-redis client not ready, reconnecting to redis://127\\.0\\.0\\.1:${own.port}\\)$`));
    } finally {
      await later.close();
    }
  });
});

/**
 * How the ioredis adapter writes script calls, against a real redis-server: the calls of one burst share socket
 * writes (the first few at once, then corked and flushed every 32 and when the burst ends), every call still gets its
 * own reply in order, and the socket is never left corked.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { Redis } from 'ioredis';
import { Holdfast, ioredisTransport } from '../../src/index.js';
import { freePort, RedisServer } from '../support/redis-server.js';

interface Socketish {
  writableCorked: number;
  _write: (...args: unknown[]) => unknown;
  _writev?: (...args: unknown[]) => unknown;
}

let server: RedisServer;
let io: Redis;
before(async () => {
  server = await RedisServer.start();
  io = new Redis(server.url);
  await io.ping();
});
after(async () => {
  io.disconnect();
  await server.stop();
});

/** Counts the writes the real socket makes while `fn` runs (one `_write` or `_writev` call each). */
async function countWrites<T>(stream: Socketish, fn: () => Promise<T>): Promise<{ writes: number; result: T }> {
  const write = stream._write;
  const writev = stream._writev;
  let writes = 0;
  stream._write = function (this: unknown, ...args: unknown[]) {
    writes++;
    return write.apply(this, args);
  };
  if (writev) {
    stream._writev = function (this: unknown, ...args: unknown[]) {
      writes++;
      return writev.apply(this, args);
    };
  }
  try {
    const result = await fn();
    return { writes, result };
  } finally {
    stream._write = write;
    if (writev) stream._writev = writev;
  }
}

void describe('ioredis adapter: writes', () => {
  void it('sends the first calls of a burst at once, corks the rest, and uncorks when the burst ends', async () => {
    const transport = ioredisTransport(io);
    const stream = io.stream as unknown as Socketish;
    const sha = (await io.script('LOAD', 'return ARGV[1]')) as string;
    const replies: Promise<unknown>[] = [];
    for (let i = 0; i < 4; i++) {
      replies.push(transport.evalsha(sha, ['k'], [String(i)]));
      assert.equal(stream.writableCorked, 0, `call ${i + 1} of the burst goes out at once`);
    }
    replies.push(transport.evalsha(sha, ['k'], ['4']));
    assert.equal(stream.writableCorked, 1, 'the fifth call of the burst is held back');
    await new Promise<void>((resolve) => process.nextTick(resolve));
    assert.equal(stream.writableCorked, 0, 'the burst ended: the socket is uncorked');
    assert.deepEqual(await Promise.all(replies), ['0', '1', '2', '3', '4']);
  });

  void it('gives 500 calls of one burst their own replies in order, in far fewer writes than calls', async () => {
    const transport = ioredisTransport(io);
    const stream = io.stream as unknown as Socketish;
    const sha = (await io.script('LOAD', 'return ARGV[1]')) as string;
    const { writes, result } = await countWrites(stream, () =>
      Promise.all(Array.from({ length: 500 }, (_, i) => transport.evalsha(sha, ['k'], [String(i)]))),
    );
    assert.deepEqual(
      result,
      Array.from({ length: 500 }, (_, i) => String(i)),
    );
    assert.equal(stream.writableCorked, 0);
    // 4 alone, then one write per 32 held back, and the rest at the burst's end: 4 + 16 (+1)
    assert.ok(writes <= 25, `500 calls went out in ${writes} writes`);
  });

  void it('takes and releases 300 locks on distinct names from one burst: every one held, then free again', async () => {
    const hf = new Holdfast({ redis: io, prefix: `writes:${Date.now()}:` });
    try {
      const held = await Promise.all(Array.from({ length: 300 }, (_, i) => hf.lock(`order:${i}`).acquire({ lease: 10_000 })));
      assert.ok(held.every((h) => h.token >= 1), 'every hold has a fencing token');
      assert.equal(io.stream && (io.stream as unknown as Socketish).writableCorked, 0);
      const again = await Promise.all(Array.from({ length: 300 }, (_, i) => hf.lock(`order:${i}`).tryAcquire()));
      assert.equal(again.filter((h) => h !== null).length, 0, 'every name is held');
      await Promise.all(held.map((h) => h.release()));
      const free = await Promise.all(Array.from({ length: 300 }, (_, i) => hf.lock(`order:${i}`).isLocked()));
      assert.equal(free.filter(Boolean).length, 0, 'every name is free again');
    } finally {
      await hf.close();
    }
  });

  void it('a call to a Redis that refuses connections fails with what the client saw: its state, address and error', async () => {
    const port = await freePort();
    const down = new Redis(port, { host: '127.0.0.1', lazyConnect: false });
    down.on('error', () => {});
    const hf = new Holdfast({ redis: down, commandTimeout: 400 });
    try {
      const error = await hf.lock('down').acquire().then(() => undefined, (e: unknown) => e);
      assert.ok(error instanceof Error);
      assert.match(error.message, new RegExp(`^script lock/acquire: no reply from Redis within 400 ms \\(ioredis (connecting|reconnecting) to 127\\.0\\.0\\.1:${port}: connect ECONNREFUSED 127\\.0\\.0\\.1:${port}\\)$`));
      assert.equal((error.cause as NodeJS.ErrnoException | undefined)?.code, 'ECONNREFUSED');
    } finally {
      await hf.close();
      down.disconnect();
    }
  });
});

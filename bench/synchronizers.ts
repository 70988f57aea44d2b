/**
 * Uncontended cost of each synchronizer, against the plain lock and a raw EVALSHA floor, on one connection.
 * Starts a throwaway redis-server. A benchmark, never a test: `npx tsx bench/synchronizers.ts [iterations]`.
 */
import { Redis } from 'ioredis';
import { Holdfast } from './holdfast.js';
import { RedisServer } from '../test/support/redis-server.js';

const iterations = Number(process.argv[2] ?? 2000);
const server = await RedisServer.start();
const redis = new Redis(server.url);
const holdfast = new Holdfast({ redis, prefix: 'bench:' });

const ROUNDS = 5;

/** µs per op of one round. */
async function round(op: () => Promise<unknown>, n: number): Promise<number> {
  const t0 = performance.now();
  for (let i = 0; i < n; i++) await op();
  return ((performance.now() - t0) * 1000) / n;
}

const floorSha = (await redis.script('LOAD', "return redis.call('del', KEYS[1])")) as string;
const rw = holdfast.readWriteLock('rw');
const sem = holdfast.semaphore('sem');
await sem.trySetPermits(10);
const psem = holdfast.permitExpirableSemaphore('psem');
await psem.trySetPermits(10);
const latch = holdfast.countDownLatch('latch');
const fenced = holdfast.fencedKey('fenced');
const multi = holdfast.multiLock(['m1', 'm2', 'm3']);
let token = 0;

const ops: [string, () => Promise<unknown>][] = [
  ['floor: SET NX PX + EVALSHA del', async () => {
    await redis.set('floor', '1', 'PX', 30000, 'NX');
    await redis.evalsha(floorSha, 1, 'floor');
  }],
  ['lock acquire+release', async () => (await holdfast.lock('l').acquire()).release()],
  ['read lock acquire+release', async () => (await rw.readLock().acquire()).release()],
  ['write lock acquire+release', async () => (await rw.writeLock().acquire()).release()],
  ['semaphore acquire+release', async () => (await sem.acquire()).release()],
  ['permit-expirable acquire+release', async () => (await psem.acquire(1, { lease: 30000 })).release()],
  ['latch trySetCount(1)+countDown', async () => {
    await latch.trySetCount(1);
    await latch.countDown();
  }],
  ['fencedKey set', () => fenced.set('v', ++token)],
  ['multiLock(3) acquire+release', async () => (await multi.acquire()).release()],
];
// Rounds interleave the operations, so a burst of load on a busy machine hits them all alike; median per operation.
for (const [, op] of ops) await round(op, 200); // warm-up: scripts loaded, JIT
const samples = ops.map(() => [] as number[]);
for (let r = 0; r < ROUNDS; r++) {
  for (const [i, [, op]] of ops.entries()) samples[i]!.push(await round(op, Math.ceil(iterations / ROUNDS)));
}
const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
const rows = ops.map(([label], i): [string, number] => [label, median(samples[i]!)]);

console.log(`| operation (${iterations} iterations in ${ROUNDS} interleaved rounds, median; ioredis, one connection) | µs/op | × floor |`);
console.log('|---|---:|---:|');
const floor = rows[0]![1];
for (const [label, us] of rows) console.log(`| ${label} | ${us.toFixed(0)} | ${(us / floor).toFixed(2)} |`);

await holdfast.close();
redis.disconnect();
await server.stop();

/**
 * ZooKeeper vs Redis, same machine, same run: acquire latency, acquire+release cycle, hand-off latency (release by
 * one client → grant to the waiting one) and contended hand-offs/s. Not a test. Prints a markdown table.
 *
 *   npm run bench:zookeeper   (starts a redis-server, a standalone ZooKeeper and two 3-node ensembles: with and
 *                              without fsync of the transaction log; all on this machine's loopback)
 *   ROUNDS=300 npm run bench:zookeeper
 */
import { Redis } from 'ioredis';
import { Holdfast, ZooKeeperHoldfast } from './holdfast.js';
import { RedisServer } from '../test/support/redis-server.js';
import { ZkCluster } from '../test/support/zookeeper.js';

const ROUNDS = Number(process.env.ROUNDS ?? 200);
const CONTEND_MS = Number(process.env.CONTEND_MS ?? 3000);

interface Backend {
  name: string;
  /** acquire → held with release() */
  acquire(client: number, name: string): Promise<{ release(): Promise<void> }>;
  close(): Promise<void>;
}

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

function pct(values: number[], p: number): number {
  const s = [...values].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))] ?? NaN;
}
const fmt = (ms: number): string => (ms < 10 ? ms.toFixed(2) : ms.toFixed(1));

async function redisBackend(server: RedisServer): Promise<Backend> {
  const conns = [new Redis(server.url), new Redis(server.url), new Redis(server.url), new Redis(server.url)];
  const clients = conns.map((redis) => new Holdfast({ redis, prefix: 'bench:' }));
  return {
    name: 'Redis (holdfast Lock, no persistence)',
    acquire: (i, name) => clients[i]!.lock(name).acquire(),
    async close() {
      await Promise.all(clients.map((c) => c.close()));
      conns.forEach((c) => c.disconnect());
    },
  };
}

async function zkBackend(label: string, connect: string): Promise<Backend> {
  const clients = [0, 1, 2, 3].map(() => new ZooKeeperHoldfast({ connect, sessionTimeout: 10_000 }));
  await Promise.all(clients.map((c) => c.connect()));
  return {
    name: label,
    acquire: (i, name) => clients[i]!.lock(name).acquire(),
    async close() {
      await Promise.all(clients.map((c) => c.close()));
    },
  };
}

async function measure(b: Backend): Promise<Record<string, string>> {
  const name = `bench-${Math.random().toString(36).slice(2, 8)}`;
  // warm-up (creates the lock's parent node, JIT)
  for (let i = 0; i < 20; i++) await (await b.acquire(0, name)).release();

  const acquire: number[] = [];
  const cycle: number[] = [];
  for (let i = 0; i < ROUNDS; i++) {
    const t0 = performance.now();
    const held = await b.acquire(0, name);
    const t1 = performance.now();
    await held.release();
    acquire.push(t1 - t0);
    cycle.push(performance.now() - t0);
  }

  // hand-off: client 1 waits while client 0 holds; time from release() to client 1's grant
  const handoff: number[] = [];
  for (let i = 0; i < Math.floor(ROUNDS / 2); i++) {
    const held = await b.acquire(0, name);
    let grantedAt = 0;
    const waiter = b.acquire(1, name).then((h) => {
      grantedAt = performance.now();
      return h;
    });
    await sleep(3); // let the waiter queue up
    const releasedAt = performance.now();
    await held.release();
    const h = await waiter;
    handoff.push(grantedAt - releasedAt);
    await h.release();
  }

  // contended: 4 clients, 1 ms critical section, hand-offs per second
  let grants = 0;
  let stop = false;
  const end = performance.now() + CONTEND_MS;
  setTimeout(() => (stop = true), CONTEND_MS);
  await Promise.all(
    [0, 1, 2, 3].map(async (i) => {
      while (!stop) {
        const held = await b.acquire(i, `${name}-c`);
        grants++;
        await sleep(1);
        await held.release();
      }
    }),
  );
  const seconds = (performance.now() - end + CONTEND_MS) / 1000;

  return {
    backend: b.name,
    'acquire p50 ms': fmt(pct(acquire, 50)),
    'acquire p99 ms': fmt(pct(acquire, 99)),
    'acquire+release p50 ms': fmt(pct(cycle, 50)),
    'hand-off p50 ms': fmt(pct(handoff, 50)),
    'hand-off p99 ms': fmt(pct(handoff, 99)),
    'contended grants/s (4 clients, 1 ms hold)': (grants / seconds).toFixed(0),
  };
}

const redis = await RedisServer.start();
const standalone = await ZkCluster.start({ tickTime: 2000 });
const ensemble = await ZkCluster.start({ size: 3, tickTime: 2000 });
const synced = await ZkCluster.start({ size: 3, tickTime: 2000, forceSync: true });
const rows: Record<string, string>[] = [];
try {
  for (const make of [
    () => redisBackend(redis),
    () => zkBackend('ZooKeeper standalone (no fsync)', standalone.connectionString),
    () => zkBackend('ZooKeeper 3-node ensemble (no fsync)', ensemble.connectionString),
    () => zkBackend('ZooKeeper 3-node ensemble (fsync)', synced.connectionString),
  ]) {
    const backend = await make();
    try {
      rows.push(await measure(backend));
    } finally {
      await backend.close();
    }
  }
} finally {
  await redis.stop();
  await standalone.stop();
  await ensemble.stop();
  await synced.stop();
}
const cols = Object.keys(rows[0]!);
console.log(`\n${ROUNDS} rounds, node ${process.version}, ${new Date().toISOString()}\n`);
console.log(`| ${cols.join(' | ')} |`);
console.log(`|${cols.map(() => '---').join('|')}|`);
for (const r of rows) console.log(`| ${cols.map((c) => r[c]).join(' | ')} |`);

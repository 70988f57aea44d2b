/**
 * Benchmark (not a test): segmented stock against a single lock, after the classic "lock segmentation for stock
 * deduction under heavy load". `npm run bench:stock` (REDIS_URL to use your own Redis; BENCH_MS per row, default 2500;
 * BENCH_CONCURRENCY concurrent buyers, default 32).
 *
 * Rows:
 * - `SegmentedStock.take` with 1, 4 and 16 segments: one atomic script per take, no lock, no critical section.
 * - a single lock with a 2 ms critical section: lock, read the stock, 2 ms of work, write it back, unlock (the
 *   usual starting point);
 * - segment locks with the same 2 ms critical section, 4 and 16 segments: each buyer locks a random free segment
 *   (lock segmentation, ConcurrentHashMap/LongAdder style): throughput grows with the segments.
 *
 * Figures on a 2-core shared machine are noisy: read the ratios, not the absolute numbers.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { Redis } from 'ioredis';
import { Holdfast } from './holdfast.js';
import { RedisServer } from '../test/support/redis-server.js';

const ROW_MS = Number(process.env.BENCH_MS ?? 2500);
const CONCURRENCY = Number(process.env.BENCH_CONCURRENCY ?? 32);
const CRITICAL_MS = 2;
const STOCK = 1_000_000_000;

interface Row {
  variant: string;
  segments: number;
  takes: number;
  ms: number;
}

/** Runs `CONCURRENCY` loops of `take` for ROW_MS; returns the takes done. */
async function drive(take: () => Promise<boolean>): Promise<{ takes: number; ms: number }> {
  let takes = 0;
  const started = performance.now();
  const end = started + ROW_MS;
  await Promise.all(
    Array.from({ length: CONCURRENCY }, async () => {
      while (performance.now() < end) if (await take()) takes++;
    }),
  );
  return { takes, ms: performance.now() - started };
}

async function main(): Promise<void> {
  let server: RedisServer | undefined;
  let url = process.env.REDIS_URL;
  if (!url) {
    server = await RedisServer.start();
    url = server.url;
  }
  const redis = new Redis(url);
  const holdfast = new Holdfast({ redis, prefix: `bench-stock-${process.pid}:` });
  const rows: Row[] = [];
  try {
    for (const segments of [1, 4, 16]) {
      const stock = holdfast.segmentedStock('sku', { segments });
      await stock.set(STOCK);
      await drive(() => stock.take(1)); // warm-up round: scripts loaded, connection busy
      await stock.set(STOCK);
      const { takes, ms } = await drive(() => stock.take(1));
      const left = await stock.available();
      if (left !== STOCK - takes) throw new Error(`segmented stock lost count: ${STOCK - takes} expected, ${left} left`);
      rows.push({ variant: 'SegmentedStock.take (atomic script, no lock)', segments, takes, ms });
    }

    for (const segments of [1, 4, 16]) {
      const prefix = `bench-stock-${process.pid}:locked${segments}:`;
      const counters = Array.from({ length: segments }, (_, i) => `${prefix}seg:${i}`);
      await redis.mset(...counters.flatMap((k) => [k, String(Math.floor(STOCK / segments))]));
      const locks = counters.map((_, i) => holdfast.lock(`locked${segments}:seg:${i}`));
      const take = async (): Promise<boolean> => {
        const start = Math.floor(Math.random() * segments);
        // A free segment if there is one; else wait for the random one.
        let held = null;
        let index = start;
        for (let k = 0; k < segments && !held; k++) {
          index = (start + k) % segments;
          held = await locks[index]!.tryAcquire({ lease: 5000 });
        }
        if (!held) {
          index = start;
          held = await locks[index]!.acquire({ lease: 5000 });
        }
        try {
          const have = Number(await redis.get(counters[index]!));
          if (have < 1) return false;
          await sleep(CRITICAL_MS); // the critical section: check the order, write it, ...
          await redis.set(counters[index]!, String(have - 1));
          return true;
        } finally {
          await held.release();
        }
      };
      const { takes, ms } = await drive(take);
      const left = (await redis.mget(...counters)).reduce((sum, v) => sum + Number(v), 0);
      const expected = Math.floor(STOCK / segments) * segments - takes;
      if (left !== expected) throw new Error(`locked variant lost count: ${expected} expected, ${left} left`);
      rows.push({ variant: segments === 1 ? `single lock, ${CRITICAL_MS} ms critical section` : `segment locks, ${CRITICAL_MS} ms critical section`, segments, takes, ms });
    }
  } finally {
    await holdfast.close();
    redis.disconnect();
    await server?.stop();
  }

  const single = rows.find((r) => r.variant.startsWith('single lock'));
  const rate = (r: Row): number => (r.takes * 1000) / r.ms;
  console.log(`\nsegmented stock vs a single lock — ${CONCURRENCY} concurrent buyers, ${ROW_MS} ms per row, Redis ${url}\n`);
  console.log('| variant | segments | takes/s | × single lock |');
  console.log('|---|---:|---:|---:|');
  for (const r of rows) {
    console.log(`| ${r.variant} | ${r.segments} | ${Math.round(rate(r)).toLocaleString('en-US')} | ${single ? (rate(r) / rate(single)).toFixed(1) : '-'} |`);
  }
}

await main();

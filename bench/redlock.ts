/**
 * Redlock cost against a single-Redis lock: uncontended acquire + release cycles over 5 local redis-server processes
 * (started here on free ports), ioredis. Ratios matter, not absolute times (a 2-core, noisy machine).
 *
 *   npx tsx bench/redlock.ts [cycles=500]
 */
import { Redis } from 'ioredis';
import { Holdfast, Redlock } from './holdfast.js';
import { RedisServer } from '../test/support/redis-server.js';

const cycles = Number(process.argv[2] ?? 500);
const servers = await Promise.all(Array.from({ length: 5 }, () => RedisServer.start()));
const clients = servers.map((s) => new Redis(s.url));
try {
  const holdfast = new Holdfast({ redis: clients[0] });
  const redlock = new Redlock({ redis: clients });
  const time = async (label: string, cycle: () => Promise<void>): Promise<number> => {
    for (let i = 0; i < 50; i++) await cycle(); // warm up (scripts loaded, JIT)
    const t0 = performance.now();
    for (let i = 0; i < cycles; i++) await cycle();
    const us = ((performance.now() - t0) * 1000) / cycles;
    console.log(`| ${label} | ${us.toFixed(0)} µs |`);
    return us;
  };
  console.log(`| ${cycles} uncontended acquire+release cycles | mean per cycle |\n|---|---|`);
  const single = await time('Lock, one Redis (fixed lease)', async () => {
    const held = await holdfast.lock('bench').acquire({ lease: 10_000 });
    await held.release();
  });
  const quorum = await time('Redlock, 5 masters (fixed lease)', async () => {
    const held = await redlock.lock('bench').acquire({ lease: 10_000 });
    await held.release();
  });
  console.log(`\nRedlock / Lock: ${(quorum / single).toFixed(2)}×  (Redlock = 3 parallel rounds over 5 nodes: acquire, fence, release)`);
  await holdfast.close();
  await redlock.close();
} finally {
  for (const c of clients) c.disconnect();
  await Promise.all(servers.map((s) => s.stop()));
}

/**
 * The uncontended holdfast Lock cycle alone (acquire + release, one at a time, the same name), for a CPU profile:
 *
 *   npm run build
 *   node --cpu-prof --cpu-prof-dir=results/tmp --import tsx bench/profile-uncontended.ts [--seconds=5] [--floor]
 *   npx tsx bench/top-frames.ts results/tmp/CPU.<…>.0.<n>.cpuprofile
 *
 * `--floor` profiles the floor instead (SET NX PX + an EVALSHA compare-and-delete). Starts its own redis-server;
 * prints cycles/s and client CPU µs per cycle.
 */
import { parseArgs } from 'node:util';
import { Redis } from 'ioredis';
import { RedisServer } from '../test/support/redis-server.js';
import { Holdfast } from './holdfast.js';

const { values } = parseArgs({ options: { seconds: { type: 'string', default: '5' }, floor: { type: 'boolean', default: false } } });
const server = await RedisServer.start();
const io = new Redis(server.url);
const hf = new Holdfast({ redis: io });
const lock = hf.lock('order:1');
const sha = (await io.script('LOAD', "if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) end return 0")) as string;
const cycle = values.floor
  ? async (): Promise<void> => {
      const t = String(Math.random());
      await io.set('f', t, 'PX', 30000, 'NX');
      await io.evalsha(sha, 1, 'f', t);
    }
  : async (): Promise<void> => {
      await (await lock.acquire()).release();
    };
try {
  for (let i = 0; i < 2000; i++) await cycle();
  const end = performance.now() + Number(values.seconds) * 1000;
  const cpu0 = process.cpuUsage();
  const t0 = performance.now();
  let n = 0;
  while (performance.now() < end) {
    for (let i = 0; i < 100; i++) await cycle();
    n += 100;
  }
  const cpu = process.cpuUsage(cpu0);
  const s = (performance.now() - t0) / 1000;
  console.log(`${values.floor ? 'floor' : 'holdfast Lock'}: ${(n / s).toFixed(0)} cycles/s, client CPU ${((cpu.user + cpu.system) / n).toFixed(1)} µs/cycle`);
} finally {
  await hf.close();
  io.disconnect();
  await server.stop();
}

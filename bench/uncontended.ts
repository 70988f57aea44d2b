/**
 * Uncontended acquire+release: holdfast next to the floor — a raw `SET key token NX PX` followed by an `EVALSHA`
 * compare-and-delete on the same connection — against one redis-server this script starts. Rounds alternate
 * between the contenders so machine noise hits both alike; the table gives medians over rounds and the ratio.
 *
 *   npm run build && npx tsx bench/uncontended.ts [--cycles 2000] [--rounds 7]
 */
import { randomUUID } from 'node:crypto';
import { parseArgs } from 'node:util';
import { Redis } from 'ioredis';
import { createClient } from 'redis';
// the shipped build, not the TypeScript sources under tsx: `npm run build` first
import { Holdfast } from '../dist/index.js';
import { RedisServer } from '../test/support/redis-server.js';

const { values } = parseArgs({ options: { cycles: { type: 'string', default: '2000' }, rounds: { type: 'string', default: '7' } } });
const CYCLES = Number(values.cycles);
const ROUNDS = Number(values.rounds);
const DEL_IF = "if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) else return 0 end";

type Cycle = () => Promise<void>;

async function measure(cycle: Cycle): Promise<{ perSec: number; p50: number; p99: number }> {
  for (let i = 0; i < 200; i++) await cycle(); // warm-up
  const samples = new Float64Array(CYCLES);
  const t0 = performance.now();
  for (let i = 0; i < CYCLES; i++) {
    const s = performance.now();
    await cycle();
    samples[i] = performance.now() - s;
  }
  const total = performance.now() - t0;
  samples.sort();
  return { perSec: (CYCLES / total) * 1000, p50: samples[Math.floor(CYCLES * 0.5)] ?? 0, p99: samples[Math.floor(CYCLES * 0.99)] ?? 0 };
}

const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? 0;

const server = await RedisServer.start();
const rows: string[] = [];
try {
  const io = new Redis(server.url);
  const nr = createClient({ url: server.url });
  await nr.connect();
  const ioSha = (await io.script('LOAD', DEL_IF)) as string;

  const contenders: Record<string, Cycle> = {};
  contenders['floor (ioredis)'] = async () => {
    const token = randomUUID();
    await io.set('floor', token, 'PX', 30000, 'NX');
    await io.evalsha(ioSha, 1, 'floor', token);
  };
  const hfIo = new Holdfast({ redis: io, prefix: 'bench:' });
  const lockIo = hfIo.lock('io');
  contenders['holdfast Lock (ioredis)'] = async () => {
    const held = await lockIo.acquire();
    await held.release();
  };
  contenders['floor (node-redis)'] = async () => {
    const token = randomUUID();
    await nr.set('floor2', token, { condition: 'NX', expiration: { type: 'PX', value: 30000 } });
    await nr.evalSha(ioSha, { keys: ['floor2'], arguments: [token] });
  };
  const hfNr = new Holdfast({ redis: nr, prefix: 'bench:' });
  const lockNr = hfNr.lock('nr');
  contenders['holdfast Lock (node-redis)'] = async () => {
    const held = await lockNr.acquire();
    await held.release();
  };

  const results: Record<string, { perSec: number[]; p50: number[]; p99: number[] }> = {};
  for (let r = 0; r < ROUNDS; r++) {
    for (const [name, cycle] of Object.entries(contenders)) {
      const m = await measure(cycle);
      const slot = (results[name] ??= { perSec: [], p50: [], p99: [] });
      slot.perSec.push(m.perSec);
      slot.p50.push(m.p50);
      slot.p99.push(m.p99);
    }
  }
  rows.push('| contender | cycles/s | p50 ms | p99 ms | time ÷ floor |', '|---|---:|---:|---:|---:|');
  for (const [name, r] of Object.entries(results)) {
    const floorName = name.includes('node-redis') ? 'floor (node-redis)' : 'floor (ioredis)';
    const floor = median(results[floorName]?.perSec ?? [1]);
    const ratio = floor / median(r.perSec);
    rows.push(`| ${name} | ${median(r.perSec).toFixed(0)} | ${median(r.p50).toFixed(3)} | ${median(r.p99).toFixed(3)} | ${ratio.toFixed(3)} |`);
  }
  await hfIo.close();
  await hfNr.close();
  io.disconnect();
  nr.destroy();
} finally {
  await server.stop();
}
console.log(`Uncontended acquire+release, ${CYCLES} cycles × ${ROUNDS} alternating rounds (medians), Node ${process.version}, ${new Date().toISOString().slice(0, 10)}\n`);
console.log(rows.join('\n'));

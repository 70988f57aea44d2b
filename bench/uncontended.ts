/**
 * Uncontended acquire+release: holdfast next to the floor — a raw `SET key token NX PX` followed by an `EVALSHA`
 * compare-and-delete on the same connection — against one redis-server this script starts.
 *
 * Timing on a small shared machine drifts by tens of percent within seconds, so the contenders are compared in
 * short interleaved blocks: each pair runs `--block` cycles of the floor and of holdfast back to back (the order
 * alternating, ABBA), and the ratio is taken per pair. The table gives the median over pairs of cycles/s and of the
 * per-pair ratio, with the interquartile range of that ratio; the process' CPU time per cycle (user + system, from
 * `process.cpuUsage()`) is a second, less noise-prone view of the client-side cost.
 *
 *   npm run build && npx tsx bench/uncontended.ts [--block 200] [--pairs 80]
 */
import { randomUUID } from 'node:crypto';
import { parseArgs } from 'node:util';
import { Redis } from 'ioredis';
import { createClient } from 'redis';
import { GlideClient, Logger } from '@valkey/valkey-glide';
// the shipped build, not the TypeScript sources under tsx: `npm run build` first
import { Holdfast } from '../dist/index.js';
import { RedisServer } from '../test/support/redis-server.js';

const { values } = parseArgs({ options: { block: { type: 'string', default: '200' }, pairs: { type: 'string', default: '80' } } });
const BLOCK = Number(values.block);
const PAIRS = Number(values.pairs);
const DEL_IF = "if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) else return 0 end";

type Cycle = () => Promise<void>;
interface Block {
  ms: number;
  cpuUs: number;
  samples: number[];
}

async function block(cycle: Cycle): Promise<Block> {
  const samples: number[] = new Array<number>(BLOCK);
  const cpu0 = process.cpuUsage();
  const t0 = performance.now();
  for (let i = 0; i < BLOCK; i++) {
    const s = performance.now();
    await cycle();
    samples[i] = performance.now() - s;
  }
  const ms = performance.now() - t0;
  const cpu = process.cpuUsage(cpu0);
  return { ms, cpuUs: cpu.user + cpu.system, samples };
}

const quantile = (xs: readonly number[], q: number): number => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor(s.length * q))] ?? 0;
};

interface Pairing {
  label: string;
  floor: Cycle;
  holdfast: Cycle;
}

async function compare(p: Pairing): Promise<string[]> {
  for (let i = 0; i < 300; i++) {
    await p.floor();
    await p.holdfast();
  }
  const floor: Block[] = [];
  const hf: Block[] = [];
  const ratios: number[] = [];
  for (let i = 0; i < PAIRS; i++) {
    let f: Block;
    let h: Block;
    if (i % 2 === 0) {
      f = await block(p.floor);
      h = await block(p.holdfast);
    } else {
      h = await block(p.holdfast);
      f = await block(p.floor);
    }
    floor.push(f);
    hf.push(h);
    ratios.push(h.ms / f.ms);
  }
  const row = (name: string, blocks: Block[], ratio: string): string => {
    const all = blocks.flatMap((b) => b.samples);
    const perSec = quantile(blocks.map((b) => (BLOCK / b.ms) * 1000), 0.5);
    const cpu = quantile(blocks.map((b) => b.cpuUs / BLOCK), 0.5);
    return `| ${name} | ${perSec.toFixed(0)} | ${quantile(all, 0.5).toFixed(3)} | ${quantile(all, 0.99).toFixed(3)} | ${cpu.toFixed(1)} | ${ratio} |`;
  };
  return [
    row(`floor (${p.label})`, floor, '1.000'),
    row(`holdfast Lock (${p.label})`, hf, `**${quantile(ratios, 0.5).toFixed(3)}** (IQR ${quantile(ratios, 0.25).toFixed(3)}–${quantile(ratios, 0.75).toFixed(3)})`),
  ];
}

const server = await RedisServer.start();
const rows: string[] = ['| contender | cycles/s | p50 ms | p99 ms | client CPU µs/cycle | time ÷ floor (median of pairs) |', '|---|---:|---:|---:|---:|---:|'];
try {
  const io = new Redis(server.url);
  const nr = createClient({ url: server.url });
  await nr.connect();
  const sha = (await io.script('LOAD', DEL_IF)) as string;

  const hfIo = new Holdfast({ redis: io, prefix: 'bench:' });
  const lockIo = hfIo.lock('io');
  rows.push(
    ...(await compare({
      label: 'ioredis',
      floor: async () => {
        const token = randomUUID();
        await io.set('floor', token, 'PX', 30000, 'NX');
        await io.evalsha(sha, 1, 'floor', token);
      },
      holdfast: async () => {
        const held = await lockIo.acquire();
        await held.release();
      },
    })),
  );

  const hfNr = new Holdfast({ redis: nr, prefix: 'bench:' });
  const lockNr = hfNr.lock('nr');
  rows.push(
    ...(await compare({
      label: 'node-redis',
      floor: async () => {
        const token = randomUUID();
        await nr.set('floor2', token, { condition: 'NX', expiration: { type: 'PX', value: 30000 } });
        await nr.evalSha(sha, { keys: ['floor2'], arguments: [token] });
      },
      holdfast: async () => {
        const held = await lockNr.acquire();
        await held.release();
      },
    })),
  );
  Logger.setLoggerConfig('error');
  const glide = await GlideClient.createClient({ addresses: [{ host: '127.0.0.1', port: server.port }], requestTimeout: 5000 });
  const hfGl = new Holdfast({ redis: glide, prefix: 'bench:' });
  const lockGl = hfGl.lock('gl');
  rows.push(
    ...(await compare({
      label: 'GLIDE',
      floor: async () => {
        const token = randomUUID();
        await glide.customCommand(['SET', 'floor3', token, 'PX', '30000', 'NX']);
        await glide.customCommand(['EVALSHA', sha, '1', 'floor3', token]);
      },
      holdfast: async () => {
        const held = await lockGl.acquire();
        await held.release();
      },
    })),
  );
  await hfIo.close();
  await hfNr.close();
  await hfGl.close();
  io.disconnect();
  nr.destroy();
  glide.close();
} finally {
  await server.stop();
}
console.log(`Uncontended acquire+release, ${PAIRS} interleaved pairs of ${BLOCK}-cycle blocks, Node ${process.version}, ${new Date().toISOString().slice(0, 10)}\n`);
console.log(rows.join('\n'));

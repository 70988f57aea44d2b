/**
 * The uncontended cycle on the in-process backend (holdfast/memory): one Lock, acquire + release in a loop, one
 * client, no server. Prints the median of `--rounds` rounds of `--cycles` cycles each, in µs per cycle, and for scale
 * the cost of the bare script calls the cycle makes (the Lua VM), measured the same way.
 *
 *   npm run build && npx tsx bench/memory.ts [--cycles 5000] [--rounds 5]
 */
import { parseArgs } from 'node:util';
import { Holdfast } from '../dist/index.js';
import { memoryRedis } from '../dist/memory/index.js';

const { values } = parseArgs({ options: { cycles: { type: 'string', default: '5000' }, rounds: { type: 'string', default: '5' } } });
const cycles = Number(values.cycles);
const rounds = Number(values.rounds);

const median = (xs: number[]): number => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)]!;
};

const redis = memoryRedis();
const holdfast = new Holdfast({ redis, prefix: 'bench:' });
const lock = holdfast.lock('cycle');

async function cycleRound(): Promise<number> {
  const t0 = performance.now();
  for (let i = 0; i < cycles; i++) {
    const held = await lock.acquire();
    await held.release();
  }
  return ((performance.now() - t0) / cycles) * 1000;
}

async function bareRound(): Promise<number> {
  // the floor of the backend: the two script calls of a cycle (SET NX PX with a token, then compare-and-delete)
  const acquire = "local t = redis.call('incr', KEYS[2]) if redis.call('set', KEYS[1], t .. ':' .. ARGV[1], 'nx', 'px', ARGV[2]) then return t end return 0";
  const release = "local v = redis.call('get', KEYS[1]) if v and string.sub(v, -#ARGV[1]) == ARGV[1] then return redis.call('del', KEYS[1]) end return 0";
  const t0 = performance.now();
  for (let i = 0; i < cycles; i++) {
    await redis.eval(acquire, ['bare:lock', 'bare:fence'], ['owner', 30000]);
    await redis.eval(release, ['bare:lock'], ['owner']);
  }
  return ((performance.now() - t0) / cycles) * 1000;
}

await cycleRound(); // warm-up: loads the VM, compiles the scripts, JITs the path
await bareRound();
const lockUs: number[] = [];
const bareUs: number[] = [];
for (let r = 0; r < rounds; r++) {
  lockUs.push(await cycleRound());
  bareUs.push(await bareRound());
}
console.log(`holdfast/memory, uncontended acquire + release, ${rounds} rounds x ${cycles} cycles (median):`);
console.log(`  Lock cycle          ${median(lockUs).toFixed(1)} µs   (rounds: ${lockUs.map((x) => x.toFixed(1)).join(', ')})`);
console.log(`  bare 2 script calls ${median(bareUs).toFixed(1)} µs   (rounds: ${bareUs.map((x) => x.toFixed(1)).join(', ')})`);
await holdfast.close();
await redis.close();

/**
 * The uncontended acquire+release cycle of several builds of holdfast, side by side: each argument is a built entry
 * (e.g. a worktree's `dist/index.js`); 40 rounds of 200-cycle blocks, order reversed every other round, against one
 * redis-server of its own, next to the floor (SET NX PX + an EVALSHA compare-and-delete). Prints µs per cycle and the
 * median per-round ratio to the floor.
 *
 *   git worktree add /tmp/old <commit> && (cd /tmp/old && npm ci && npx tsup)
 *   npm run build && npx tsx bench/compare-builds.ts /tmp/old/dist/index.js $PWD/dist/index.js
 */
import { Redis } from 'ioredis';
import { RedisServer } from '../test/support/redis-server.js';
const builds = process.argv.slice(2);
const server = await RedisServer.start();
const io = new Redis(server.url);
const locks = await Promise.all(builds.map(async (b, i) => {
  const { Holdfast } = await import(b);
  const hf = new Holdfast({ redis: io, prefix: `ab${i}:` });
  return hf.lock('x');
}));
const sha = (await io.script('LOAD', "if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) end return 0")) as string;
const floor = async () => { const t = String(Math.random()); await io.set('f', t, 'PX', 30000, 'NX'); await io.evalsha(sha, 1, 'f', t); };
const cycles = [floor, ...locks.map((l) => async () => { await (await l.acquire()).release(); })];
for (const c of cycles) for (let i = 0; i < 500; i++) await c();
const times = cycles.map(() => [] as number[]);
for (let r = 0; r < 40; r++) {
  const order = r % 2 ? [...cycles.keys()].reverse() : [...cycles.keys()];
  for (const k of order) { const t0 = performance.now(); for (let i = 0; i < 200; i++) await cycles[k]!(); times[k]!.push(performance.now() - t0); }
}
const med = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
const ratios = times.map((t) => med(t.map((x, i) => x / times[0]![i]!)));
console.log(['floor', ...builds].map((b, i) => `${b}: ${(med(times[i]!) * 5).toFixed(1)} us/cycle, ratio ${ratios[i]!.toFixed(3)}`).join('\n'));
io.disconnect(); await server.stop();

/**
 * Several builds of holdfast side by side: each argument is a built entry (e.g. a worktree's `dist/index.js`), run
 * against one redis-server of its own next to the floor (SET NX PX + an EVALSHA compare-and-delete), in interleaved
 * rounds whose order is reversed every other round. Prints, per build, wall µs per cycle, client CPU µs per cycle and
 * the median per-round ratio of its time to the floor's.
 *
 *   git worktree add /tmp/old <commit> && ln -s $PWD/node_modules /tmp/old/ && (cd /tmp/old && npx tsup)
 *   npm run build && npx tsx bench/compare-builds.ts [--in-flight 1] [--rounds 40] /tmp/old/dist/index.js $PWD/dist/index.js
 *
 * `--bare` adds holdfast Lock's own two scripts sent straight through ioredis, without the library around them: what
 * the Redis side of a cycle costs whatever the client does.
 *
 * `--fixed-lease` adds, for each build, a row of the same Lock acquired with a fixed lease (`{ lease: 30000 }`) next to
 * its default watchdog row: what the watchdog costs over a lease that simply runs out.
 *
 * `--client node-redis` runs every build and the floor on one node-redis client instead of ioredis.
 *
 * `--in-flight 1` (the default) is the uncontended cycle: one acquire+release at a time on one name. `--in-flight N`
 * runs N cycles at once on one connection, each on a fresh name (`order:<n>`), as per-entity locking does.
 */
import { parseArgs } from 'node:util';
import { Redis } from 'ioredis';
import { createClient } from 'redis';
import { RedisServer } from '../test/support/redis-server.js';

const { values, positionals: builds } = parseArgs({
  allowPositionals: true,
  options: {
    'in-flight': { type: 'string', default: '1' },
    rounds: { type: 'string', default: '40' },
    block: { type: 'string' },
    bare: { type: 'boolean', default: false },
    'fixed-lease': { type: 'boolean', default: false },
    client: { type: 'string', default: 'ioredis' },
  },
});
const IN_FLIGHT = Number(values['in-flight']);
const ROUNDS = Number(values.rounds);
const BLOCK = Number(values.block ?? (IN_FLIGHT === 1 ? 200 : 2000));

const server = await RedisServer.start();
const io = new Redis(server.url);
const sha = (await io.script('LOAD', "if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) end return 0")) as string;
if (values.client !== 'ioredis' && values.client !== 'node-redis') throw new Error(`--client: ioredis or node-redis, got ${values.client}`);
const nodeRedis = values.client === 'node-redis' ? createClient({ url: server.url }) : undefined;
await nodeRedis?.connect();
/** The client every build and the floor run on. */
const redis: object = nodeRedis ?? io;
let n = 0;
type Cycle = () => Promise<void>;
const floor: Cycle = nodeRedis
  ? async () => {
      const key = IN_FLIGHT === 1 ? 'f' : `f:order:${++n}`;
      const t = String(Math.random());
      await nodeRedis.set(key, t, { PX: 30000, NX: true });
      await nodeRedis.evalSha(sha, { keys: [key], arguments: [t] });
    }
  : async () => {
      const key = IN_FLIGHT === 1 ? 'f' : `f:order:${++n}`;
      const t = String(Math.random());
      await io.set(key, t, 'PX', 30000, 'NX');
      await io.evalsha(sha, 1, key, t);
    };
const cycles: Cycle[] = [floor];
const labels = ['floor'];
if (values.bare) {
  // imported only here: independent-keys.ts loads the peers (bench/package.json), which a plain comparison needs not
  const { bareLockCycle } = await import('./independent-keys.js');
  const bare = await bareLockCycle({ io }, 'bare:');
  cycles.push(() => bare(IN_FLIGHT === 1 ? 'x' : `order:${++n}`));
  labels.push("holdfast Lock's scripts, bare");
}
const clients: { close(): Promise<void> }[] = [];
for (const [i, b] of builds.entries()) {
  const { Holdfast } = (await import(b)) as { Holdfast: new (o: object) => HoldfastLike };
  const hf = new Holdfast({ redis, prefix: `ab${i}:` });
  clients.push(hf);
  const one = hf.lock('x');
  cycles.push(IN_FLIGHT === 1 ? async () => (await one.acquire()).release() : async () => (await hf.lock(`order:${++n}`).acquire()).release());
  labels.push(b);
  if (values['fixed-lease']) {
    const fixed = { lease: 30_000 };
    cycles.push(IN_FLIGHT === 1 ? async () => (await one.acquire(fixed)).release() : async () => (await hf.lock(`order:${++n}`).acquire(fixed)).release());
    labels.push(`${b} (fixed lease)`);
  }
}
interface HoldfastLike {
  lock(name: string): { acquire(options?: { lease?: number }): Promise<{ release(): Promise<void> }> };
  close(): Promise<void>;
}

async function block(cycle: Cycle): Promise<{ ms: number; cpuUs: number }> {
  const cpu0 = process.cpuUsage();
  const t0 = performance.now();
  if (IN_FLIGHT === 1) {
    for (let i = 0; i < BLOCK; i++) await cycle();
  } else {
    let left = BLOCK;
    await Promise.all(
      Array.from({ length: IN_FLIGHT }, async () => {
        while (left-- > 0) await cycle();
      }),
    );
  }
  const cpu = process.cpuUsage(cpu0);
  return { ms: performance.now() - t0, cpuUs: cpu.user + cpu.system };
}

for (const c of cycles) await block(c); // warm-up: scripts loaded, JIT
const times = cycles.map(() => [] as number[]);
const cpus = cycles.map(() => [] as number[]);
for (let r = 0; r < ROUNDS; r++) {
  const order = r % 2 ? [...cycles.keys()].reverse() : [...cycles.keys()];
  for (const k of order) {
    const b = await block(cycles[k]!);
    times[k]!.push(b.ms);
    cpus[k]!.push(b.cpuUs);
    if (IN_FLIGHT > 1) await io.flushdb(); // a dedicated server: no keys of one block in the next one's way
  }
}
const med = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
const ratios = times.map((t) => med(t.map((x, i) => x / times[0]![i]!)));
console.log(`${values.client}, ${IN_FLIGHT} in flight, ${ROUNDS} rounds of ${BLOCK} cycles`);
for (const [i, label] of labels.entries()) {
  console.log(
    `${label}: ${((med(times[i]!) * 1000) / BLOCK).toFixed(1)} µs/cycle, client CPU ${(med(cpus[i]!) / BLOCK).toFixed(1)} µs/cycle, time ÷ floor ${ratios[i]!.toFixed(3)}`,
  );
}
for (const c of clients) await c.close();
await nodeRedis?.quit();
io.disconnect();
await server.stop();

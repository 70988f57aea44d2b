/**
 * holdfast's own JavaScript per uncontended Lock cycle, without any I/O: the shipped build (dist/) on a transport
 * that answers every call at once (the acquire script's reply is a fresh token, the release's 0). By default it prints
 * the library's cost with hot caches, the least it can add to a real cycle. `--cold` walks 32 MB of memory before each
 * cycle, so that the cycle's code and data start out of the CPU caches, as they do in a real uncontended loop, where
 * ~100 µs of kernel and I/O work pass between two replies: next to `bench/compare-builds.ts --bare` (what the library
 * adds to real round trips), it shows how much of that is code that runs cold.
 *
 *   npm run build && npx tsx bench/js-cost.ts [--cycles 200000] [--rounds 5] [--cold]
 *
 * Each round runs the Lock cycle (watchdog lease, then a fixed lease) and the same two calls on the bare transport,
 * and prints µs of wall and CPU time per cycle (`--cold`: of the cycles alone, without the walks; default 3,000
 * cycles, and the first round is JIT warm-up).
 */
import { parseArgs } from 'node:util';
import { Holdfast } from './holdfast.js';

const { values } = parseArgs({
  options: { cycles: { type: 'string' }, rounds: { type: 'string', default: '5' }, cold: { type: 'boolean', default: false } },
});
const COLD = values.cold;
const N = Number(values.cycles ?? (COLD ? 3000 : 200_000));
const ROUNDS = Number(values.rounds);

let token = 0;
type Args = readonly (string | number)[];
const transport = {
  kind: 'instant',
  // the lock's acquire script takes 3 keys and answers a first hold's token; its release takes 2 and answers 0 left
  evalsha: (_sha: string, keys: readonly string[], _args: Args): Promise<unknown> => Promise.resolve(keys.length === 3 ? ++token : 0),
  eval: (): Promise<unknown> => Promise.resolve(0),
  command: (args: readonly string[]): Promise<unknown> => Promise.resolve(args[0] === 'CONFIG' ? ['maxmemory-policy', 'noeviction'] : 0),
  createSubscriber: () => Promise.reject(new Error('no waiting in this benchmark')),
};
const holdfast = new Holdfast({ redis: transport });
const lock = holdfast.lock('x');

const cycles: Record<string, () => Promise<unknown>> = {
  'Lock, watchdog': async () => (await lock.acquire()).release(),
  'Lock, lease': async () => (await lock.acquire({ lease: 30_000 })).release(),
  'bare transport': async () => {
    await transport.evalsha('', ['a', 'b', 'c'], []);
    await transport.evalsha('', ['a', 'b'], []);
  },
};

/** Walked before each cold cycle: larger than the CPU caches. */
const junk = COLD ? new Float64Array(4 << 20) : new Float64Array(0);
let sink = 0;
const evict = (): void => {
  for (let i = 0; i < junk.length; i += 8) sink += junk[i] as number;
};

for (let round = 1; round <= ROUNDS; round++) {
  const line: string[] = [];
  for (const [name, cycle] of Object.entries(cycles)) {
    let wall = 0;
    let cpuUs = 0;
    if (COLD) {
      for (let i = 0; i < N; i++) {
        evict();
        const cpu0 = process.cpuUsage();
        const t0 = performance.now();
        await cycle();
        wall += performance.now() - t0;
        const cpu = process.cpuUsage(cpu0);
        cpuUs += cpu.user + cpu.system;
      }
    } else {
      const cpu0 = process.cpuUsage();
      const t0 = performance.now();
      for (let i = 0; i < N; i++) await cycle();
      wall = performance.now() - t0;
      const cpu = process.cpuUsage(cpu0);
      cpuUs = cpu.user + cpu.system;
    }
    line.push(`${name} ${((wall * 1000) / N).toFixed(2)} µs (CPU ${(cpuUs / N).toFixed(2)})`);
  }
  console.log(`round ${round}${COLD ? ', cold' : ''}: ${line.join(' · ')}`);
}
if (sink < 0) console.log(sink); // keeps the walks from being optimised away
await holdfast.close();

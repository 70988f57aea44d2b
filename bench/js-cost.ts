/**
 * holdfast's own JavaScript per uncontended Lock cycle, without any I/O: the shipped build (dist/) on a transport
 * that answers every call at once (the acquire script's reply is a fresh token, the release's 0). What it prints is
 * the library's cost with hot caches, the least it can add to a real cycle; `bench/compare-builds.ts --bare` gives
 * what it adds next to real round trips, where its code runs cold between replies.
 *
 *   npm run build && npx tsx bench/js-cost.ts [--cycles 200000] [--rounds 5]
 *
 * Each round runs the Lock cycle (watchdog lease, then a fixed lease) and the same two calls on the bare transport,
 * and prints µs of wall and CPU time per cycle.
 */
import { parseArgs } from 'node:util';
import { Holdfast } from './holdfast.js';

const { values } = parseArgs({ options: { cycles: { type: 'string', default: '200000' }, rounds: { type: 'string', default: '5' } } });
const N = Number(values.cycles);
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

for (let round = 1; round <= ROUNDS; round++) {
  const line: string[] = [];
  for (const [name, cycle] of Object.entries(cycles)) {
    const cpu0 = process.cpuUsage();
    const t0 = performance.now();
    for (let i = 0; i < N; i++) await cycle();
    const cpu = process.cpuUsage(cpu0);
    line.push(`${name} ${(((performance.now() - t0) * 1000) / N).toFixed(2)} µs (CPU ${((cpu.user + cpu.system) / N).toFixed(2)})`);
  }
  console.log(`round ${round}: ${line.join(' · ')}`);
}
await holdfast.close();

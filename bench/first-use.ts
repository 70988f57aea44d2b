/**
 * The synchronous work of the first acquisition under a new prefix: the fencing counter key of its first name (the
 * key table, which once walked ~170,000 tags per prefix). Runs in a fresh process each time (so nothing is cached
 * yet), and reports the longest and the median first `fence()` over fresh prefixes, and the old walk for comparison.
 *
 *   npx tsx bench/first-use.ts
 */
import { execFileSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';

const ROUNDS = 15;

if (process.argv[2] === '--child') {
  const { Keys, slotOf } = await import('../src/keys.js');
  const t0 = performance.now();
  new Keys(`p${process.pid}:`).fence(`name-${Math.random()}`); // the very first use in this process
  const first = performance.now() - t0;
  const t1 = performance.now();
  new Keys(`q${process.pid}:`).fence(`other-${Math.random()}`); // a second prefix, a new slot
  const second = performance.now() - t1;
  // the walk the table used to make per prefix, for comparison
  const t2 = performance.now();
  const seen = new Set<number>();
  for (let n = 0; seen.size < 16384; n++) seen.add(slotOf(`w:{${n.toString(36)}}:fence`));
  const walk = performance.now() - t2;
  console.log(JSON.stringify({ first, second, walk }));
} else {
  const runs = Array.from({ length: ROUNDS }, () =>
    JSON.parse(execFileSync(process.execPath, ['--import', 'tsx', fileURLToPath(import.meta.url), '--child'], { encoding: 'utf8' })) as Record<string, number>,
  );
  const stat = (k: string): string => {
    const v = runs.map((r) => r[k] as number).sort((a, b) => a - b);
    return `median ${(v[v.length >> 1] as number).toFixed(3)} ms, max ${(v[v.length - 1] as number).toFixed(3)} ms`;
  };
  console.log(`first fence() in a fresh process (tag index built): ${stat('first')}`);
  console.log(`first fence() under a second prefix:               ${stat('second')}`);
  console.log(`the old per-prefix walk (for comparison):           ${stat('walk')}`);
}

/**
 * The synchronous work of the first acquisition under a new prefix: the fencing counter key of its first name (the
 * key table, which once walked ~170,000 tags per prefix). Runs in a fresh process each time (so nothing is cached
 * yet), and reports the longest and the median first `fence()` over fresh prefixes, and the old walk for comparison.
 *
 * A prefix with a `{` it does not close (`a{`: the counter's hash tag is then `{<t>`) has tags of its own: each process
 * also times `fence()` for a name in every one of the 16,384 slots under `a{`, each the first use of its slot. A
 * slot's time is its best over the rounds (the work of a slot is the same in every round; a busy machine only adds),
 * and the report gives the slowest and the median slot, the slowest call seen at all, and the old way for comparison:
 * a walk through the candidates from 0 for every new slot, which for the last slot to be reached walks them all.
 *
 *   npx tsx bench/first-use.ts
 */
import { execFileSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';

const ROUNDS = 15;

if (process.argv[2] === '--child') {
  const { Keys, SLOTS, slotOf } = await import('../src/keys.js');
  const t0 = performance.now();
  new Keys(`p${process.pid}:`).fence(`name-${Math.random()}`); // the very first use in this process
  const first = performance.now() - t0;
  const t1 = performance.now();
  new Keys(`q${process.pid}:`).fence(`other-${Math.random()}`); // a second prefix, a new slot
  const second = performance.now() - t1;
  // the walk the table used to make per prefix, for comparison
  const t2 = performance.now();
  const seen = new Set<number>();
  for (let n = 0; seen.size < SLOTS; n++) seen.add(slotOf(`w:{${n.toString(36)}}:fence`));
  const walk = performance.now() - t2;
  // a prefix with an unclosed `{`: a name in every slot (found first, not timed), then each slot's first fence()
  const brace = new Keys('a{');
  const names = new Array<string>(SLOTS);
  for (let n = 0, left = SLOTS; left > 0; n++) {
    const slot = slotOf(brace.lock(`n${n}`));
    if (names[slot] === undefined) {
      names[slot] = `n${n}`;
      left--;
    }
  }
  const perSlot = names.map((name) => {
    const t = performance.now();
    brace.fence(name);
    return Math.round((performance.now() - t) * 1000); // µs
  });
  // the old way under `a{`: every new slot walked the candidates from 0; the last slot reached walked them all
  const t4 = performance.now();
  const reached = new Set<number>();
  for (let n = 0; reached.size < SLOTS; n++) reached.add(slotOf(`b{{${n.toString(36)}}:fence`));
  const braceWalk = performance.now() - t4;
  console.log(JSON.stringify({ first, second, walk, braceWalk, braceMax: Math.max(...perSlot) / 1000, perSlot }));
} else {
  const runs = Array.from({ length: ROUNDS }, () =>
    JSON.parse(execFileSync(process.execPath, ['--import', 'tsx', fileURLToPath(import.meta.url), '--child'], { encoding: 'utf8' })) as Record<string, number> & {
      perSlot: number[];
    },
  );
  const stat = (k: string): string => {
    const v = runs.map((r) => r[k] as number).sort((a, b) => a - b);
    return `median ${(v[v.length >> 1] as number).toFixed(3)} ms, max ${(v[v.length - 1] as number).toFixed(3)} ms`;
  };
  console.log(`first fence() in a fresh process (tag index built): ${stat('first')}`);
  console.log(`first fence() under a second prefix:               ${stat('second')}`);
  console.log(`the old per-prefix walk (for comparison):           ${stat('walk')}`);
  const best = runs[0]!.perSlot.map((_, slot) => Math.min(...runs.map((r) => r.perSlot[slot] as number)) / 1000).sort((a, b) => a - b);
  console.log(`under "a{", a new slot's fence(), best of ${ROUNDS}:      median slot ${(best[best.length >> 1] as number).toFixed(3)} ms, slowest slot ${(best[best.length - 1] as number).toFixed(3)} ms`);
  console.log(`under "a{", the slowest new-slot fence() seen:      ${stat('braceMax')}`);
  console.log(`under "a{", the old walk to its last slot:          ${stat('braceWalk')}`);
}

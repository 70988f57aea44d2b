#!/usr/bin/env node
// Runs the default test suite on a busy machine: two CPU-burning processes (`node -e 'for(;;);'`) run beside it for
// the whole run, as on a shared CI runner or a laptop doing other work. Then stops them and reports the run time and
// the suite's outcome. Extra args pass through to scripts/run-tests.mjs, e.g.
// `npm run test:under-load -- test/primitives/lock.test.ts`. `--runs=N` runs the suite N times in a row (stops at the
// first failure).
import { spawn } from 'node:child_process';
import process from 'node:process';
import { performance } from 'node:perf_hooks';

const BURNERS = 2;
const args = process.argv.slice(2);
const runsArg = args.find((a) => a.startsWith('--runs='));
const runs = runsArg ? Number(runsArg.slice('--runs='.length)) : 1;
if (!Number.isInteger(runs) || runs < 1) {
  console.error('--runs=N: N must be a whole number ≥ 1');
  process.exit(2);
}
const passThrough = args.filter((a) => a !== runsArg);

const burners = Array.from({ length: BURNERS }, () => spawn(process.execPath, ['-e', 'for(;;);'], { stdio: 'ignore' }));
const stopBurners = () => {
  for (const burner of burners) if (burner.exitCode === null) burner.kill('SIGKILL');
};
process.on('exit', stopBurners);
for (const signal of ['SIGINT', 'SIGTERM']) {
  process.on(signal, () => {
    stopBurners();
    process.exit(130);
  });
}

const runSuite = () =>
  new Promise((resolve) => {
    const child = spawn(process.execPath, ['scripts/run-tests.mjs', ...passThrough], { stdio: 'inherit' });
    child.on('exit', (code) => resolve(code ?? 1));
  });

let status = 0;
const times = [];
for (let i = 1; i <= runs && status === 0; i++) {
  const t0 = performance.now();
  status = await runSuite();
  times.push(((performance.now() - t0) / 1000).toFixed(1));
  console.log(`# under load (${BURNERS} CPU burners): run ${i} of ${runs} ${status === 0 ? 'passed' : `failed (exit ${status})`} in ${times.at(-1)} s`);
}
stopBurners();
console.log(`# under load: ${times.length} run(s), ${status === 0 ? 'all passed' : 'stopped at a failure'}; run times ${times.join(' s, ')} s`);
process.exit(status);

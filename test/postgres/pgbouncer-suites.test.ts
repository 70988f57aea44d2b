/**
 * The lock and semaphore suites once more on PostgreSQL, through a PgBouncer in transaction mode: every operation is
 * one statement, so it works through a transaction pooler; LISTEN cannot (the bouncer hands the listening server
 * connection to others), so holdfast's waiters poll (test/postgres/wakeups.test.ts shows it finds that out). Each
 * suite runs in a child process (HOLDFAST_ADAPTERS=postgres, HOLDFAST_POSTGRES_VIA=pgbouncer: see test/support/suite.ts).
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { runSuite } from '../support/child-suite.js';

void describe('through PgBouncer in transaction mode (waiters poll)', { concurrency: false }, () => {
  for (const file of ['test/primitives/lock.test.ts', 'test/primitives/semaphore.test.ts']) {
    it(`${file} passes`, async () => {
      const run = await runSuite(file, { HOLDFAST_ADAPTERS: 'postgres', HOLDFAST_POSTGRES_VIA: 'pgbouncer' });
      const failures = run.output.split('\n').filter((line) => /^\s*not ok /.test(line));
      assert.equal(run.fail, 0, `failures:\n${failures.join('\n')}\n${run.output.slice(-4000)}`);
      assert.equal(run.code, 0);
      assert.ok(run.pass >= 5, `the suite ran (${run.pass} passed)`);
      // (that holdfast finds LISTEN deaf there and says so is test/postgres/wakeups.test.ts's: a suite whose waits all
      // end within the 2 s the check takes may close its clients before it answers)
    });
  }
});

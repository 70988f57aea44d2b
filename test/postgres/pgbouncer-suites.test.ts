/**
 * The lock and semaphore suites once more on PostgreSQL, through a PgBouncer in transaction mode: every operation is
 * one statement, so it works through a transaction pooler; LISTEN cannot (the bouncer hands the listening server
 * connection to others), so holdfast finds that out, says so once (a `POLLING` warning) and its waiters poll. Each
 * suite runs in a child process (HOLDFAST_ADAPTERS=postgres, HOLDFAST_POSTGRES_VIA=pgbouncer: see test/support/suite.ts).
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { runSuite } from '../support/child-suite.js';

void describe('through PgBouncer in transaction mode (waiters poll)', { concurrency: false }, () => {
  for (const file of ['test/primitives/lock.test.ts', 'test/primitives/semaphore.test.ts']) {
    it(`${file} passes, and holdfast says once that its waiters poll`, async () => {
      const run = await runSuite(file, { HOLDFAST_ADAPTERS: 'postgres', HOLDFAST_POSTGRES_VIA: 'pgbouncer' });
      const failures = run.output.split('\n').filter((line) => /^\s*not ok /.test(line));
      assert.equal(run.fail, 0, `failures:\n${failures.join('\n')}\n${run.output.slice(-4000)}`);
      assert.equal(run.code, 0);
      assert.ok(run.pass >= 5, `the suite ran (${run.pass} passed)`);
      assert.match(run.output, /waiters poll instead of being woken by NOTIFY/, 'the POLLING warning was given');
    });
  }
});

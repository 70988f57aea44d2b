/**
 * `holdfast jobs` (the built CLI) against a real Redis: the records the scheduler writes, as JSON and as a table.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { Redis } from 'ioredis';
import { Holdfast } from '../../src/index.js';
import { ensureBuilt, run, sleep, until } from '../support/cli.js';
import { RedisServer } from '../support/redis-server.js';
import type { JobInfo } from '../../src/index.js';

void describe('holdfast jobs (built CLI, real Redis)', { timeout: 300_000 }, () => {
  let server: RedisServer;
  let redis: Redis;
  let holdfast: Holdfast;
  let env: NodeJS.ProcessEnv;

  before(async () => {
    await ensureBuilt();
    server = await RedisServer.start();
    redis = new Redis(server.url, { maxRetriesPerRequest: 1 });
    holdfast = new Holdfast({ redis, prefix: 'app:' });
    env = { REDIS_URL: server.url };
  });
  after(async () => {
    await holdfast.close();
    redis.disconnect();
    await server.stop();
  });

  void it('shows the last run, by which fingerprint, how long, its error, and a run in progress; never an owner id', async () => {
    const scheduler = holdfast.scheduler({ onError: () => {} });
    // a finished run that failed, then one that succeeded, of 'reports:daily' (direct claims at chosen ticks)
    const tick = Date.UTC(2030, 0, 1);
    const first = await scheduler.run('reports:daily', tick, () => Promise.reject(new Error('disk full')), { schedule: '0 0 3 * * *' });
    assert.equal(first.ran, true);
    assert.equal((await scheduler.run('reports:daily', tick + 1000, () => sleep(60))).ran, true);
    // a run in progress of 'sync'
    const claim = await scheduler.claim('sync', tick, { lockAtMostFor: 30_000, schedule: '*/5 * * * *' });
    assert.ok(claim);
    // a job that failed twice in a row
    await scheduler.run('flaky', tick, () => Promise.reject(new Error('boom')));
    await scheduler.run('flaky', tick + 1000, () => Promise.reject(new Error('boom again')));
    try {
      const json = await run(['jobs', '--prefix', 'app:', '--json'], env);
      assert.equal(json.code, 0, json.stderr);
      assert.ok(!json.stdout.includes(holdfast.core.clientId), 'no owner id (nor the client id in it) is shown');
      const views = JSON.parse(json.stdout) as JobInfo[];
      assert.deepEqual(
        views.map((v) => v.name),
        ['flaky', 'reports:daily', 'sync'],
      );
      const [flaky, daily, sync] = views as [JobInfo, JobInfo, JobInfo];
      assert.equal(daily.schedule, '0 0 3 * * *', 'the schedule recorded by the first claim is kept');
      assert.equal(daily.lastRunTick, new Date(tick + 1000).toISOString());
      assert.equal(daily.lastRunBy, scheduler.fingerprint);
      assert.match(scheduler.fingerprint, /^[0-9a-f]{12}$/);
      assert.ok(daily.lastRunMs !== null && daily.lastRunMs >= 50, `took ${daily.lastRunMs}`);
      assert.equal(daily.lastError, null);
      assert.equal(daily.failuresInARow, 0);
      assert.equal(daily.runs, 2);
      assert.equal(daily.running, false);
      assert.equal(flaky.lastError, 'Error: boom again');
      assert.equal(flaky.failuresInARow, 2);
      assert.equal(sync.running, true);
      assert.equal(sync.runningOn, scheduler.fingerprint);
      assert.equal(sync.lastRunTick, null);
      assert.ok(sync.lockedForMs > 25_000 && sync.lockedForMs <= 30_000, `locked for ${sync.lockedForMs}`);

      const text = await run(['jobs', '--prefix', 'app:', '--match', 'sy*'], env);
      assert.equal(text.code, 0, text.stderr);
      const [header, row, extra] = text.stdout.trim().split('\n');
      assert.match(header!, /^NAME\s+SCHEDULE\s+LAST RUN \(TICK\)\s+BY\s+TOOK\s+RESULT\s+NOW$/);
      assert.match(row!, new RegExp(`^sync\\s+\\*/5 \\* \\* \\* \\*\\s+-.*running on ${scheduler.fingerprint} for `));
      assert.equal(extra, undefined);
    } finally {
      await claim.finish();
      await scheduler.stop();
    }
    // finished: no longer running, and the record expires (a TTL on every key it wrote)
    await until(async () => {
      const views = JSON.parse((await run(['jobs', '--prefix', 'app:', '--json', '--match', 'sync'], env)).stdout) as JobInfo[];
      return views[0]?.running === false && views[0].runs === 1;
    });
    for (const name of ['flaky', 'reports:daily', 'sync']) {
      const ttl = await redis.pttl(holdfast.core.keys.job(name));
      assert.ok(ttl > 6 * 24 * 3_600_000, `${name} is kept for days, not forever: ${ttl}`);
    }
  });

  void it('bad options exit 64; nothing recorded says so', async () => {
    assert.equal((await run(['jobs', '--limit', '0'], env)).code, 64);
    assert.equal((await run(['jobs', 'name'], env)).code, 64);
    const empty = await run(['jobs', '--prefix', 'other:'], env);
    assert.equal(empty.code, 0);
    assert.equal(empty.stdout.trim(), 'no jobs recorded');
  });
});

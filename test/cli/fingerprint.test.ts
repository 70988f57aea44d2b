/**
 * One fingerprint and one label for one owner, everywhere: the held object, `readers()`, `fingerprint(owner)`, the
 * diagnostics payload, the dashboard's snapshot, `holdfast inspect` and `holdfast jobs` (built CLI, real Redis). The
 * owner here is the client's own id, so that the scheduler's instance fingerprint (that of its client id) is the same
 * owner's too.
 */
import assert from 'node:assert/strict';
import dc from 'node:diagnostics_channel';
import { after, before, describe, it } from 'node:test';
import { Redis } from 'ioredis';
import { CHANNELS, fingerprint, Holdfast, type AcquireContext, type JobInfo } from '../../src/index.js';
import type { DashboardSnapshot } from '../../src/cli/dashboard.js';
import type { LockView } from '../../src/cli/inspect.js';
import { ensureBuilt, run, until } from '../support/cli.js';
import { startDashboard } from '../support/dashboard.js';
import { RedisServer } from '../support/redis-server.js';

void describe('one fingerprint, one label (built CLI, real Redis)', { timeout: 300_000 }, () => {
  let server: RedisServer;
  let redis: Redis;
  let holdfast: Holdfast;
  let env: NodeJS.ProcessEnv;

  before(async () => {
    await ensureBuilt();
    server = await RedisServer.start();
    redis = new Redis(server.url, { maxRetriesPerRequest: 1 });
    holdfast = new Holdfast({ redis, prefix: 'fp:', label: 'host-a:4242' });
    env = { REDIS_URL: server.url };
  });
  after(async () => {
    await holdfast.close();
    redis.disconnect();
    await server.stop();
  });

  void it('the held object, readers(), fingerprint(), the diagnostics payload, the dashboard, inspect and jobs agree', async () => {
    const owner = holdfast.core.clientId;
    const seen: AcquireContext[] = [];
    const onEnd = (ctx: unknown) => seen.push(ctx as AcquireContext);
    const channel = dc.tracingChannel(CHANNELS.acquire);
    channel.subscribe({ start() {}, end() {}, asyncStart() {}, asyncEnd: onEnd, error() {} });
    const rw = holdfast.readWriteLock('shared');
    const held = await rw.readLock().acquire({ owner });
    channel.unsubscribe({ start() {}, end() {}, asyncStart() {}, asyncEnd: onEnd, error() {} });
    const scheduler = holdfast.scheduler({ onError: () => {} });
    const claim = await scheduler.claim('report', Date.UTC(2030, 0, 1), { lockAtMostFor: 30_000 });
    assert.ok(claim);
    const dash = await startDashboard(['--prefix', 'fp:'], env);
    try {
      const expected = fingerprint(owner);
      assert.match(expected, /^[0-9a-f]{12}$/);
      const readers = await rw.readLock().readers();
      const snap = (await (await fetch(new URL('/api/snapshot', dash.url))).json()) as DashboardSnapshot;
      const card = snap.entries.find((e) => e.kind === 'read-write-lock' && e.name === 'shared');
      const inspected = JSON.parse((await run(['inspect', '--prefix', 'fp:', '--json', 'shared'], env)).stdout) as LockView;
      const jobs = JSON.parse((await run(['jobs', '--prefix', 'fp:', '--json'], env)).stdout) as JobInfo[];
      assert.deepEqual(
        {
          held: held.fingerprint,
          readers: readers.map((r) => r.fingerprint),
          diagnostics: seen.filter((c) => c.name === 'shared').map((c) => c.fingerprint),
          dashboard: card?.holders.map((h) => h.holder),
          inspect: inspected.holders.map((h) => h.fingerprint),
          scheduler: scheduler.fingerprint,
          jobs: jobs.map((j) => j.runningOn),
        },
        {
          held: expected,
          readers: [expected],
          diagnostics: [expected],
          dashboard: [expected],
          inspect: [expected],
          scheduler: expected,
          jobs: [expected],
        },
      );
    } finally {
      await dash.stop();
      await claim.finish();
      await scheduler.stop();
      await held.release();
    }
  });

  void it("the client's label: in inspect, jobs, the diagnostics payloads; never the owner id; gone after close()", async () => {
    const key = holdfast.core.keys.clientLabel(fingerprint(holdfast.core.clientId));
    await until(async () => (await redis.get(key)) === 'host-a:4242');
    const ttl = await redis.pttl(key);
    assert.ok(ttl > 0 && ttl <= 60_000, `the label key has a TTL: ${ttl}`);

    const seen: AcquireContext[] = [];
    const sub = { start() {}, end() {}, asyncStart() {}, asyncEnd: (ctx: unknown) => seen.push(ctx as AcquireContext), error() {} };
    dc.tracingChannel(CHANNELS.acquire).subscribe(sub);
    const lock = await holdfast.lock('labelled').acquire();
    dc.tracingChannel(CHANNELS.acquire).unsubscribe(sub);
    const scheduler = holdfast.scheduler({ onError: () => {} });
    const claim = await scheduler.claim('labelled-job', Date.UTC(2030, 0, 1), { lockAtMostFor: 30_000 });
    assert.ok(claim);
    try {
      assert.equal(seen.find((c) => c.name === 'labelled')?.label, 'host-a:4242');
      const view = JSON.parse((await run(['inspect', '--prefix', 'fp:', '--json', 'labelled'], env)).stdout) as LockView;
      assert.deepEqual([view.label, view.holders[0]?.label], ['host-a:4242', 'host-a:4242']);
      const text = await run(['inspect', '--prefix', 'fp:', 'labelled'], env);
      assert.match(text.stdout, /host-a:4242/);
      const jobs = JSON.parse((await run(['jobs', '--prefix', 'fp:', '--json', '--match', 'labelled-job'], env)).stdout) as (JobInfo & { runningOnLabel: string })[];
      assert.equal(jobs[0]?.runningOnLabel, 'host-a:4242');
      // another client, without a label: its holders have none
      const other = new Holdfast({ redis, prefix: 'fp:' });
      const plain = await other.lock('unlabelled').acquire();
      const unlabelled = JSON.parse((await run(['inspect', '--prefix', 'fp:', '--json', 'unlabelled'], env)).stdout) as LockView;
      assert.equal(unlabelled.label, null);
      await plain.release();
      await other.close();
    } finally {
      await lock.release();
      await claim.finish();
      await scheduler.stop();
    }
    const closing = new Holdfast({ redis, prefix: 'fp:', label: 'short-lived' });
    const closingKey = closing.core.keys.clientLabel(fingerprint(closing.core.clientId));
    await until(async () => (await redis.get(closingKey)) === 'short-lived');
    await closing.close();
    await until(async () => (await redis.exists(closingKey)) === 0);
  });

  void it('a bad label is refused at once with a typed error', () => {
    assert.throws(() => new Holdfast({ redis, label: '' }), RangeError);
    assert.throws(() => new Holdfast({ redis, label: 'a\nb' }), RangeError);
    assert.throws(() => new Holdfast({ redis, label: 'x'.repeat(201) }), RangeError);
    assert.throws(() => new Holdfast({ redis, label: 42 as unknown as string }), TypeError);
  });
});

/**
 * `holdfast/cron`'s runOnce as the onTick of real `cron` CronJobs on two holdfast clients (per Redis client), and
 * the adapters' argument checks.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import 'reflect-metadata';
import { CronJob } from 'cron';
import { makeHoldfast, serverAdapter } from '../support/clients.js';
import { RedisServer } from '../support/redis-server.js';
import { describeEachAdapter, sleep, type Opened } from '../support/suite.js';
import { runOnce } from '../../src/integrations/cron.js';
import { holdfastRunCoordinator } from '../../src/integrations/node-cron.js';
import { RunOnce, RunOnceModule } from '../../src/integrations/nestjs.js';
import { isHoldfastError, type JobRunInfo } from '../../src/index.js';

describeEachAdapter('holdfast/cron runOnce', (ctx) => {
  const made: Opened[] = [];

  before(async () => {
    for (let i = 0; i < 2; i++) made.push(await ctx.open({ prefix: 'cron-test:' }));
  });

  void it('two CronJobs of one name run each tick once; a throwing tick is reported and the job goes on', async () => {
    const ran: { tick: number; by: number; schedule: string }[] = [];
    const errors: [unknown, JobRunInfo][] = [];
    await sleep(1000 - (Date.now() % 1000) + 300);
    const jobs = made.map((m, by) =>
      CronJob.from({
        cronTime: '* * * * * *',
        onTick: runOnce(
          m.holdfast,
          'cron-job',
          async ({ tick, name }) => {
            ran.push({ tick: tick.getTime(), by, schedule: name });
            if (ran.length === 1) throw new Error('first tick fails');
            await sleep(20);
          },
          { lockAtMostFor: 5000, lockAtLeastFor: 200, onError: (e, info) => void errors.push([e, info]) },
        ),
        start: true,
        waitForCompletion: true,
      }),
    );
    await sleep(3200);
    for (const j of jobs) void j.stop();
    await sleep(300);
    const ticks = ran.map((r) => r.tick);
    assert.ok(ticks.length >= 3, `ticks ran: ${ticks.join(', ')}`);
    assert.equal(new Set(ticks).size, ticks.length, `no tick twice: ${ticks.join(', ')}`);
    for (let i = 1; i < ticks.length; i++) assert.equal(ticks[i]! - ticks[i - 1]!, 1000, 'no tick missed');
    assert.equal(errors.length, 1);
    assert.equal((errors[0]![0] as Error).message, 'first tick fails');
    assert.equal(errors[0]![1].phase, 'run');
    // the record `holdfast jobs` reads: the job's schedule came from the CronJob it ticked for
    const key = made[0]!.holdfast.core.keys.job('cron-job');
    assert.equal(await made[0]!.holdfast.core.command(['HGET', key, 'c'], key), '* * * * * *');
  });
}, { notOnPostgres: 'the scheduler comes to PostgreSQL in a later round' });

void describe('scheduler adapters reject bad arguments at once', () => {
  let server: RedisServer;
  let made: Awaited<ReturnType<typeof makeHoldfast>>;
  before(async () => {
    server = await RedisServer.start();
    made = await makeHoldfast(serverAdapter, server.url);
  });
  after(async () => {
    await made.dispose();
    await server.stop();
  });

  void it('cron, node-cron and nestjs', async () => {
    const h = made.holdfast;
    const fn = (): void => {};
    assert.throws(() => runOnce({} as never, 'x', fn), TypeError);
    assert.throws(() => runOnce(h, '', fn), RangeError);
    assert.throws(() => runOnce(h, 'x', 'fn' as never), TypeError);
    assert.throws(() => runOnce(h, 'x', fn, { lockAtMostFor: 100, lockAtLeastFor: 200 }), RangeError);
    assert.throws(() => runOnce(h, 'x', fn, { lockAtMost: 1 } as never), TypeError);
    assert.throws(() => holdfastRunCoordinator(null as never), TypeError);
    assert.throws(() => holdfastRunCoordinator(h, { lockAtLeastFor: -1 }), RangeError);
    const coordinator = holdfastRunCoordinator(h);
    await assert.rejects(coordinator.shouldRun('job:2026-01-01T00:00:00.000Z', 0), RangeError);
    await assert.rejects(coordinator.shouldRun(5 as never, 1000), TypeError);
    assert.throws(() => RunOnce({ lockAtMostFor: 0 }), RangeError);
    assert.throws(() => RunOnce({ name: '' }), RangeError);
    assert.throws(() => RunOnce({ ttl: 1 } as never), TypeError);
    assert.throws(() => RunOnce()({}, 'field', { value: 42 }), TypeError);
    assert.throws(() => RunOnceModule.forRoot('redis://' as never), TypeError);
    assert.throws(() => RunOnceModule.forRootAsync({} as never), TypeError);
  });

  void it('node-cron coordinator: a fire is claimed once, finished by onComplete, and lockAtLeastFor holds the next', async () => {
    const a = holdfastRunCoordinator(made.holdfast, { lockAtLeastFor: 300 });
    const b = holdfastRunCoordinator(made.holdfast);
    const fire = (s: number): string => `report:${new Date(Date.UTC(2030, 0, 1, 0, 0, s)).toISOString()}`;
    assert.equal(await a.shouldRun(fire(0), 5000), true);
    assert.equal(await b.shouldRun(fire(0), 5000), false, 'the same fire elsewhere');
    assert.equal(await b.shouldRun(fire(1), 5000), false, 'the next fire while the first runs');
    await a.onComplete(fire(0));
    assert.equal(await b.shouldRun(fire(1), 5000), false, 'lockAtLeastFor after a fast run');
    await sleep(350);
    assert.equal(await b.shouldRun(fire(1), 5000), true);
    await b.onComplete(fire(1));
    await b.onComplete(fire(1)); // twice: nothing left to finish
  });
});

void describe('scheduler adapters after holdfast.close()', () => {
  let server: RedisServer;
  before(async () => {
    server = await RedisServer.start();
  });
  after(async () => {
    await server.stop();
  });

  void it('a CronJob that ticks after its holdfast client was closed reports ClientClosedError to onError instead of throwing into cron; node-cron skips the fire and reports it', async () => {
    const made = await makeHoldfast(serverAdapter, server.url);
    const errors: [unknown, JobRunInfo][] = [];
    const ran: number[] = [];
    const onTick = runOnce(made.holdfast, 'closed-job', () => void ran.push(Date.now()), { onError: (e, info) => void errors.push([e, info]) });
    const schedulerErrors: [unknown, JobRunInfo][] = [];
    const scheduler = made.holdfast.scheduler({ onError: (e, info) => void schedulerErrors.push([e, info]) });
    const coordinator = holdfastRunCoordinator(scheduler);
    await made.dispose(); // holdfast.close() first, the jobs still scheduled
    // what cron does on a tick: calls onTick and awaits it (a rejection there would surface in cron)
    await onTick.call(undefined);
    assert.equal(ran.length, 0);
    assert.equal(errors.length, 1);
    assert.ok(isHoldfastError(errors[0]![0]) && errors[0]![0].code === 'CLIENT_CLOSED', String(errors[0]![0]));
    assert.equal(errors[0]![1].name, 'closed-job');
    assert.equal(errors[0]![1].phase, 'claim');
    assert.equal(await coordinator.shouldRun(`report:${new Date().toISOString()}`, 5000), false);
    assert.equal(schedulerErrors.length, 1);
    assert.ok(isHoldfastError(schedulerErrors[0]![0]) && schedulerErrors[0]![0].code === 'CLIENT_CLOSED', String(schedulerErrors[0]![0]));
    assert.equal(schedulerErrors[0]![1].name, 'report');
  });
});

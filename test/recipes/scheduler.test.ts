import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { makeHoldfast, serverAdapter } from '../support/clients.js';
import { RedisServer } from '../support/redis-server.js';
import { describeEachAdapter, sleep, type Opened } from '../support/suite.js';
import { scripts } from '../../src/lua/scripts.gen.js';
import { LockLostError, type Holdfast, type JobRunInfo, type SchedulerOptions, type SkipReason } from '../../src/index.js';

/** Sleeps until `ms` past the next whole second, so a test's ticks fall where it expects them. */
const alignTo = async (ms: number): Promise<void> => sleep(1000 - (Date.now() % 1000) + ms);

void describe('scheduler claim and finish scripts (the per-tick record and ShedLock locks)', () => {
  let server: RedisServer;
  let holdfast: Holdfast;
  let dispose: () => Promise<void>;
  before(async () => {
    server = await RedisServer.start();
    ({ holdfast, dispose } = await makeHoldfast(serverAdapter, server.url));
  });
  after(async () => {
    await dispose();
    await server.stop();
  });

  void it('a tick is claimed once; a run holds the job for lockAtLeastFor after it started', async () => {
    const core = holdfast.core;
    const key = core.keys.job('direct');
    const claim = (tick: number, owner: string) => core.run(scripts['scheduler/claim'], [key], [String(tick), owner, 5000, 60_000, 'fp', '', 60_000]);
    const finish = (owner: string, atLeast: number) => core.run(scripts['scheduler/finish'], [key], [owner, atLeast, 12, '', 60_000]);
    const t = 1_800_000_000_000;
    assert.deepEqual(await claim(t, 'a'), [1, 5000]);
    assert.deepEqual(await claim(t, 'b'), [0, 0], 'the same tick again: already claimed');
    const locked = await claim(t + 1000, 'b');
    assert.equal(locked[0], 0, 'the next tick while the run is going: locked');
    assert.ok((locked[1] ?? 0) > 4000);
    assert.equal(await finish('b', 0), 0, 'only the owner finishes');
    assert.equal(await finish('a', 2000), 1);
    assert.deepEqual(await claim(t, 'c'), [0, 0], 'a late clock cannot re-run the finished tick');
    const least = await claim(t + 1000, 'c');
    assert.equal(least[0], 0, 'lockAtLeastFor holds the job after a fast run');
    assert.ok((least[1] ?? 0) > 0 && (least[1] ?? 0) <= 2000);
    await sleep((least[1] ?? 0) + 50);
    assert.deepEqual(await claim(t + 1000, 'c'), [1, 5000]);
    const pttl = Number(await core.command(['PTTL', key], key));
    assert.ok(pttl > 50_000, `the tick record is kept: ${pttl}`);
  });

  void it('abandon undoes only its own claim: the job is free and the tick unrecorded, as before the claim', async () => {
    const core = holdfast.core;
    const key = core.keys.job('abandoned');
    const claim = (tick: number, owner: string) => core.run(scripts['scheduler/claim'], [key], [String(tick), owner, 60_000, 60_000, 'fp', '', 60_000]);
    const abandon = (owner: string) => core.run(scripts['scheduler/abandon'], [key], [owner]);
    assert.deepEqual(await claim(1000, 'a'), [1, 60_000]);
    assert.equal(await core.run(scripts['scheduler/finish'], [key], ['a', 0, 5, '', 60_000]), 1);
    assert.deepEqual(await claim(2000, 'lost-reply'), [1, 60_000]);
    assert.equal(await abandon('someone-else'), 0, 'owner-checked');
    assert.equal((await claim(3000, 'b'))[0], 0, 'still locked by the claim');
    assert.equal(await abandon('lost-reply'), 1);
    assert.equal(await abandon('lost-reply'), 0, 'once');
    assert.deepEqual(await claim(1000, 'c'), [0, 0], 'the tick before it stays recorded');
    assert.deepEqual(await claim(2000, 'c'), [1, 60_000], 'its own tick can be claimed again');
  });

  void it('a crashed run frees the job after lockAtMostFor', async () => {
    const core = holdfast.core;
    const key = core.keys.job('crashed');
    const claim = (tick: number, owner: string) => core.run(scripts['scheduler/claim'], [key], [String(tick), owner, 200, 60_000, 'fp', '', 60_000]);
    assert.deepEqual(await claim(1000, 'dead'), [1, 200]);
    assert.equal((await claim(2000, 'b'))[0], 0);
    await sleep(250);
    assert.deepEqual(await claim(2000, 'b'), [1, 200]);
  });
});

describeEachAdapter('Scheduler', (ctx) => {
  let a: Holdfast;
  let b: Holdfast;

  before(async () => {
    a = (await ctx.open({ prefix: 'sched-test:' })).holdfast;
    b = (await ctx.open({ prefix: 'sched-test:' })).holdfast;
  });

  void it('two instances share the ticks: each runs once; a throwing run is reported and the schedule goes on', async () => {
    const ran: number[] = [];
    const errors: [unknown, JobRunInfo][] = [];
    const skips: SkipReason[] = [];
    const job = async ({ tick }: { tick: Date }): Promise<void> => {
      ran.push(tick.getTime());
      await sleep(20);
      if (ran.length === 1) throw new Error('first run fails');
    };
    const sa = a.scheduler({ onError: (e, info) => errors.push([e, info]) });
    const sb = b.scheduler({ onError: (e, info) => errors.push([e, info]) });
    sa.on('skip', (info) => skips.push(info.reason));
    sb.on('skip', (info) => skips.push(info.reason));
    await alignTo(300);
    sa.schedule('shared', '* * * * * *', job);
    sb.schedule('shared', '* * * * * *', job);
    await sleep(2500);
    await Promise.all([sa.stop(), sb.stop()]);
    assert.ok(ran.length >= 2, `ran ticks ${ran.join(', ')}`);
    assert.equal(new Set(ran).size, ran.length, 'no tick twice');
    for (let i = 1; i < ran.length; i++) assert.equal(ran[i]! - ran[i - 1]!, 1000, 'no tick missed');
    assert.equal(errors.length, 1);
    assert.equal((errors[0]![0] as Error).message, 'first run fails');
    assert.equal(errors[0]![1].phase, 'run');
    assert.deepEqual(skips, Array(ran.length).fill('claimed-elsewhere'), 'the other instance skipped every tick');
  });

  void it('stop() waits for a running job; stop({ abort: true }) aborts it through its signal', async () => {
    const s1 = a.scheduler();
    let finished = false;
    let started!: () => void;
    const running = new Promise<void>((r) => (started = r));
    s1.schedule('waits', '* * * * * *', async () => {
      started();
      await sleep(300);
      finished = true;
    });
    await running;
    await s1.stop();
    assert.equal(finished, true, 'stop resolved after the run ended');
    assert.equal(s1.jobs.length, 0);

    const s2 = a.scheduler();
    let reason: unknown;
    let started2!: () => void;
    const running2 = new Promise<void>((r) => (started2 = r));
    s2.schedule('aborts', '* * * * * *', ({ signal }) => {
      started2();
      return new Promise<void>((resolve) => {
        signal.addEventListener('abort', () => {
          reason = signal.reason;
          resolve();
        });
      });
    });
    await running2;
    await s2.stop({ abort: true });
    assert.ok(reason instanceof DOMException && reason.name === 'AbortError');
    assert.throws(() => s2.schedule('later', '* * * * * *', () => {}), /stopped/);
  });

  void it('a run that outlives lockAtMostFor is told through its signal, and another tick can start', async () => {
    const s = b.scheduler({ lockAtMostFor: 1200 });
    let lost: unknown;
    let lostAfter = 0;
    const ticks: number[] = [];
    s.schedule('hangs', '* * * * * *', async ({ signal, tick }) => {
      ticks.push(tick.getTime());
      if (ticks.length > 1) return;
      const t0 = performance.now();
      await new Promise<void>((resolve) => signal.addEventListener('abort', () => resolve(), { once: true }));
      lost = signal.reason;
      lostAfter = performance.now() - t0;
    });
    const deadline = Date.now() + 5000;
    while (ticks.length < 2 && Date.now() < deadline) await sleep(50);
    await s.stop();
    assert.ok(lost instanceof LockLostError, `aborted with ${String(lost)}`);
    // measured from the run's start, which comes after the claim that set the 1200 ms lock: the signal must come
    // before the lock lapses; the lower bound only says it did not fire at once
    assert.ok(lostAfter > 200 && lostAfter < 1700, `aborted before lockAtMostFor lapsed: ${Math.round(lostAfter)} ms`);
    assert.ok(ticks.length >= 2, 'the schedule went on');
  });

  void it('close() of the client aborts running jobs and stops the scheduler', async () => {
    const extra = await ctx.open();
    const s = extra.holdfast.scheduler();
    let aborted = false;
    let started!: () => void;
    const running = new Promise<void>((r) => (started = r));
    const job = s.schedule('closing', '* * * * * *', ({ signal }) => {
      started();
      return new Promise<void>((resolve) => signal.addEventListener('abort', () => ((aborted = true), resolve()), { once: true }));
    });
    await running;
    await extra.dispose();
    assert.equal(aborted, true);
    assert.equal(job.nextRun, null);
  });

  void it('rejects bad arguments at once', () => {
    const s = a.scheduler();
    const fn = (): void => {};
    assert.throws(() => s.schedule('', '* * * * * *', fn), RangeError);
    assert.throws(() => s.schedule('x', 'not a cron', fn), RangeError);
    assert.throws(() => s.schedule('x', 5 as never, fn), TypeError);
    assert.throws(() => s.schedule('x', '* * * * * *', 'fn' as never), TypeError);
    assert.throws(() => s.schedule('x', '* * * * * *', fn, { lockAtMostFor: 100, lockAtLeastFor: 200 }), RangeError);
    assert.throws(() => s.schedule('x', '* * * * * *', fn, { lockAtMost: 100 } as never), TypeError);
    assert.throws(() => s.schedule('x', '* * * * * *', fn, { timezone: 'Mars/Olympus' }), RangeError);
    assert.throws(() => a.scheduler({ lockAtMostFor: 0 }), RangeError);
    assert.throws(() => a.scheduler({ onError: 1 } as never), TypeError);
    const job = s.schedule('once', '0 0 0 1 1 *', fn, { timezone: 'UTC' });
    assert.equal(job.nextRun?.getUTCHours(), 0);
    assert.throws(() => s.schedule('once', '* * * * * *', fn), /already scheduled/);
    return s.stop();
  });
}, { concurrency: true, notOnPostgres: 'the scheduler comes to PostgreSQL in a later round' });

const sleepUntil = (epochMs: number): Promise<void> => sleep(Math.max(0, epochMs - Date.now()));
/** Blocks the event loop (a long GC pause, a CPU-bound handler) for `ms`. */
const blockFor = (ms: number): void => {
  const end = Date.now() + ms;
  while (Date.now() < end) {
    /* busy */
  }
};
/** The whole second at least `leadMs` from now. */
const secondAfter = (leadMs: number): number => Math.ceil((Date.now() + leadMs) / 1000) * 1000;

describeEachAdapter('Scheduler when Redis stalls past commandTimeout', (ctx) => {
  const made: Opened[] = [];

  before(async () => {
    for (let i = 0; i < 3; i++) made.push(await ctx.open({ prefix: 'stall:', commandTimeout: 400 }));
  });
  after(() => {
    if (ctx.server.paused) ctx.server.resume();
  });

  void it('a claim left in flight by a SIGSTOPped Redis does not lock the job: the next tick after the stall runs once', async () => {
    const ran: { tick: number; instance: number }[] = [];
    const claimErrors: string[] = [];
    const schedulers = made.map((m, instance) => {
      const s = m.holdfast.scheduler({
        onError: (error, info) => {
          if (info.phase === 'claim') claimErrors.push((error as { code?: string }).code ?? String(error));
        },
      });
      s.schedule('stalled', '* * * * * *', ({ tick }) => void ran.push({ tick: tick.getTime(), instance }));
      return s;
    });
    // Ticks run before the stall; Redis freezes 100 ms before tick T, with every instance's claim of T in flight
    // once it falls due, and thaws 1.7 s after it: the claims of T and T+1 time out (400 ms) and run late.
    const T = secondAfter(2000);
    await sleepUntil(T - 100);
    ctx.server.pause();
    await sleepUntil(T + 1700);
    ctx.server.resume();
    await sleepUntil(T + 3600);
    await Promise.all(schedulers.map((s) => s.stop()));
    const ticks = ran.map((r) => r.tick);
    assert.ok(ticks.some((t) => t < T - 100), `ticks before the stall ran: ${ticks.map((t) => t - T).join(', ')}`);
    assert.ok(claimErrors.length >= 3 && claimErrors.every((c) => c === 'REDIS_CONNECTION'), `claims timed out: ${claimErrors.join(', ')}`);
    assert.ok(!ticks.includes(T) && !ticks.includes(T + 1000), 'the ticks whose claims got no reply did not run');
    for (const tick of [T + 2000, T + 3000]) {
      assert.equal(ticks.filter((t) => t === tick).length, 1, `tick T+${tick - T} ran once (ran: ${ticks.map((t) => t - T).join(', ')})`);
    }
    assert.equal(new Set(ticks).size, ticks.length, 'no tick twice');
  });

  void it("missedTicks 'run-latest': a tick whose claim Redis left unanswered is claimed again and runs once", async () => {
    const ran: number[] = [];
    let failed = 0;
    // One tick a minute, at a second chosen to fall 1.5 s from now; Redis freezes across it for 1.2 s.
    const T = secondAfter(1500);
    const cron = `${new Date(T).getSeconds()} * * * * *`;
    const schedulers = made.slice(0, 2).map((m) => {
      const s = m.holdfast.scheduler({ missedTicks: 'run-latest', onError: (_e, info) => void (info.phase === 'claim' && failed++) });
      s.schedule('retried', cron, ({ tick }) => void ran.push(tick.getTime()));
      return s;
    });
    await sleepUntil(T - 100);
    ctx.server.pause();
    await sleepUntil(T + 1100);
    ctx.server.resume();
    const deadline = T + 6000;
    while (ran.length === 0 && Date.now() < deadline) await sleep(50);
    await sleep(500);
    await Promise.all(schedulers.map((s) => s.stop()));
    assert.ok(failed >= 2, `the claims of both instances failed first: ${failed}`);
    assert.deepEqual(ran, [T], 'the missed tick ran once, after Redis came back');
  });
}, { requiresServer: 'pauses the redis-server process (SIGSTOP)', notOnPostgres: 'the scheduler comes to PostgreSQL in a later round' });

void describe('Scheduler: ticks missed while the process was blocked', () => {
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

  /** Schedules an every-second job, blocks the event loop from 200 ms before tick T to 2.3 s after it, runs to T+3.5 s. */
  async function blockedRun(options: SchedulerOptions): Promise<{ T: number; ran: number[]; missed: number[] }> {
    const s = made.holdfast.scheduler(options);
    const ran: number[] = [];
    const missed: number[] = [];
    s.on('skip', (info) => void (info.reason === 'missed' && missed.push(info.tick.getTime())));
    const T = secondAfter(1500);
    s.schedule(`blocked-${options.missedTicks ?? 'default'}`, '* * * * * *', ({ tick }) => void ran.push(tick.getTime()));
    await sleepUntil(T - 200);
    blockFor(2500);
    await sleepUntil(T + 3500);
    await s.stop();
    return { T, ran, missed };
  }

  void it('by default (skip) none of them runs; the schedule goes on', async () => {
    const { T, ran, missed } = await blockedRun({});
    const rel = ran.map((t) => t - T);
    assert.ok(!rel.includes(0) && !rel.includes(1000) && !rel.includes(2000), `missed ticks ran: ${rel.join(', ')}`);
    assert.deepEqual(missed, [T], 'one skip (missed) for the tick whose timer fired late');
    assert.ok(rel.includes(3000), `the next tick ran: ${rel.join(', ')}`);
  });

  void it("with 'run-latest' the latest of them runs once, late; the earlier ones do not", async () => {
    const { T, ran, missed } = await blockedRun({ missedTicks: 'run-latest' });
    const rel = ran.map((t) => t - T);
    assert.deepEqual(
      rel.filter((t) => t >= 0 && t <= 2000),
      [2000],
      `ran: ${rel.join(', ')}`,
    );
    assert.deepEqual(missed, []);
    assert.ok(rel.includes(3000), `the next tick ran: ${rel.join(', ')}`);
  });

  void it('rejects a bad policy at once', () => {
    assert.throws(() => made.holdfast.scheduler({ missedTicks: 'queue' as never }), RangeError);
    assert.throws(() => made.holdfast.scheduler({ missedTicks: 1 as never }), TypeError);
    assert.throws(() => made.holdfast.scheduler({ missedTickTolerance: -1 }), RangeError);
    const s = made.holdfast.scheduler();
    assert.throws(() => s.schedule('x', '* * * * * *', () => {}, { missedTicks: 'all' as never }), RangeError);
  });
});

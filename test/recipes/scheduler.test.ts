import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { adapters, makeHoldfast } from '../support/clients.js';
import { RedisServer } from '../support/redis-server.js';
import { scripts } from '../../src/lua/scripts.gen.js';
import { LockLostError, type Holdfast, type JobRunInfo, type SkipReason } from '../../src/index.js';

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));
/** Sleeps until `ms` past the next whole second, so a test's ticks fall where it expects them. */
const alignTo = async (ms: number): Promise<void> => sleep(1000 - (Date.now() % 1000) + ms);

void describe('scheduler claim and finish scripts (the per-tick record and ShedLock locks)', () => {
  let server: RedisServer;
  let holdfast: Holdfast;
  let dispose: () => Promise<void>;
  before(async () => {
    server = await RedisServer.start();
    ({ holdfast, dispose } = await makeHoldfast(adapters[0]!, server.url));
  });
  after(async () => {
    await dispose();
    await server.stop();
  });

  void it('a tick is claimed once; a run holds the job for lockAtLeastFor after it started', async () => {
    const core = holdfast.core;
    const key = core.keys.job('direct');
    const claim = (tick: number, owner: string): Promise<unknown> => core.run(scripts['scheduler/claim'], [key], [tick, owner, 5000, 60_000]);
    const finish = (owner: string, atLeast: number): Promise<unknown> => core.run(scripts['scheduler/finish'], [key], [owner, atLeast, 60_000]);
    const t = 1_800_000_000_000;
    assert.deepEqual(await claim(t, 'a'), [1, 5000]);
    assert.deepEqual(await claim(t, 'b'), [0, 0], 'the same tick again: already claimed');
    const locked = (await claim(t + 1000, 'b')) as number[];
    assert.equal(locked[0], 0, 'the next tick while the run is going: locked');
    assert.ok((locked[1] ?? 0) > 4000);
    assert.equal(await finish('b', 0), 0, 'only the owner finishes');
    assert.equal(await finish('a', 2000), 1);
    assert.deepEqual(await claim(t, 'c'), [0, 0], 'a late clock cannot re-run the finished tick');
    const least = (await claim(t + 1000, 'c')) as number[];
    assert.equal(least[0], 0, 'lockAtLeastFor holds the job after a fast run');
    assert.ok((least[1] ?? 0) > 0 && (least[1] ?? 0) <= 2000);
    await sleep((least[1] ?? 0) + 50);
    assert.deepEqual(await claim(t + 1000, 'c'), [1, 5000]);
    const pttl = Number(await core.command(['PTTL', key], key));
    assert.ok(pttl > 50_000, `the tick record is kept: ${pttl}`);
  });

  void it('a crashed run frees the job after lockAtMostFor', async () => {
    const core = holdfast.core;
    const key = core.keys.job('crashed');
    assert.deepEqual(await core.run(scripts['scheduler/claim'], [key], [1000, 'dead', 200, 60_000]), [1, 200]);
    assert.equal(((await core.run(scripts['scheduler/claim'], [key], [2000, 'b', 200, 60_000])) as number[])[0], 0);
    await sleep(250);
    assert.deepEqual(await core.run(scripts['scheduler/claim'], [key], [2000, 'b', 200, 60_000]), [1, 200]);
  });
});

for (const adapter of adapters) {
  void describe(`Scheduler (${adapter.name})`, { concurrency: true }, () => {
    let server: RedisServer;
    const made: Awaited<ReturnType<typeof makeHoldfast>>[] = [];
    let a: Holdfast;
    let b: Holdfast;

    before(async () => {
      server = await RedisServer.start();
      for (let i = 0; i < 2; i++) made.push(await makeHoldfast(adapter, server.url, { prefix: 'sched-test:' }));
      a = made[0]!.holdfast;
      b = made[1]!.holdfast;
    });
    after(async () => {
      for (const m of made) await m.dispose();
      await server.stop();
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
      const extra = await makeHoldfast(adapter, server.url);
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
  });
}

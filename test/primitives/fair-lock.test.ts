/**
 * FairLock against a real redis-server, once per adapter; the queue-order and crash tests use separate OS processes.
 */
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { AcquireTimeoutError, type FairLock, type Holdfast, LockNotHeldError } from '../../src/index.js';
import { adapters, makeHoldfast, serverAdapter, type AdapterCase } from '../support/clients.js';
import { createTestSchema, dropSchema, POSTGRES_URL } from '../support/postgres.js';
import { RedisServer } from '../support/redis-server.js';
import { describeEachAdapter, sleep } from '../support/suite.js';

/** Polls `check` until it returns true or `ms` passes. */
async function until(check: () => Promise<boolean> | boolean, ms = 5000, what = 'condition'): Promise<void> {
  const deadline = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(10);
  }
}

const FIXTURE = join(import.meta.dirname, 'fixtures', 'fair-waiter.ts');

interface WaiterProcess {
  child: ChildProcess;
  ready: Promise<void>;
  /** Sends the job: the process connects and queues for the lock. */
  go: (job: { prefix: string; name: string; id: string; waiterTimeout: number; holdMs: number }) => void;
  /** Resolves with `Date.now()` when the process printed that it holds the lock. */
  acquired: Promise<number>;
  /** The fencing token it printed with `acquired`, once it has. */
  token: () => number | undefined;
  exited: Promise<number | null>;
}

/** A waiter process (see fixtures/fair-waiter.ts), started now and given its job later: start-up is the slow part. */
function waiterProcess(adapter: string, url: string): WaiterProcess {
  const child = spawn(process.execPath, ['--import', 'tsx', FIXTURE, adapter, url], { stdio: ['pipe', 'pipe', 'inherit'] });
  let out = '';
  let onReady: () => void = () => {};
  let onAcquired: (t: number) => void = () => {};
  let token: number | undefined;
  const ready = new Promise<void>((r) => (onReady = r));
  const acquired = new Promise<number>((r) => (onAcquired = r));
  child.stdout?.on('data', (chunk: Buffer) => {
    out += chunk.toString();
    if (out.includes('ready\n')) onReady();
    if (out.includes('acquired ')) onAcquired(Date.now());
    const printed = /acquired (\d+)\n/.exec(out);
    if (printed) token = Number(printed[1]);
  });
  const exited = new Promise<number | null>((r) => child.on('exit', (code) => r(code)));
  return { child, ready, go: (job) => child.stdin?.write(JSON.stringify(job) + '\n'), acquired, token: () => token, exited };
}

// The per-adapter suites have servers of their own; this one serves the describes outside them.
let server: RedisServer;
before(async () => {
  server = await RedisServer.start();
});
after(async () => {
  await server.stop();
});

describeEachAdapter('FairLock', (ctx) => {
  async function client(options: Parameters<typeof ctx.open>[0] = {}): Promise<Holdfast> {
    return (await ctx.open(options)).holdfast;
  }
  async function pair(): Promise<[Holdfast, Holdfast]> {
    const a = await client();
    const b = await client({ prefix: a.settings.prefix });
    return [a, b];
  }
  async function waitersOf(lock: FairLock, n: number): Promise<void> {
    await until(async () => (await lock.inspect()).waiters.length >= n, 10_000, `${n} waiters`);
  }

  void it('acquires, re-enters in the same call chain, releases, and mints increasing tokens', async () => {
    const hf = await client();
    const lock = hf.fairLock('basic');
    const first = await lock.acquire();
    assert.equal(first.holdCount, 1);
    await first.release();
    await lock.withLock(async ({ token }) => {
      assert.ok(token > first.token);
      const inner = await lock.acquire();
      assert.equal(inner.holdCount, 2);
      assert.equal(inner.token, token);
      assert.equal((await lock.inspect()).holdCount, 2);
      await inner.release();
      assert.equal((await lock.inspect()).holdCount, 1);
    });
    assert.equal(await lock.isLocked(), false);
    // an explicit owner is reentrant across handles and clients
    const other = await client({ prefix: hf.settings.prefix });
    const a = await lock.acquire({ owner: 'job-7' });
    const b = await other.fairLock('basic').acquire({ owner: 'job-7', timeout: 0 });
    assert.equal(b.holdCount, 2);
    // the last hold in that client but not the owner's last: sent without a marker, told holds remain, sent again with one
    await b.release();
    const info = await lock.inspect();
    assert.equal(info.owner, 'job-7');
    assert.equal(info.holdCount, 1, 'one hold released, not the lock');
    assert.equal(a.lost, false);
    await a.release();
    assert.equal(await lock.isLocked(), false);
  });

  void it('another call chain waits, and gets the lock in FIFO order (one process)', async () => {
    const hf = await client();
    const lock = hf.fairLock('fifo-local');
    const held = await lock.acquire();
    const order: number[] = [];
    const waits: Promise<void>[] = [];
    for (let i = 0; i < 6; i++) {
      waits.push(lock.withLock(async () => void order.push(i)));
      await waitersOf(lock, i + 1);
    }
    assert.equal(await lock.tryAcquire(), null);
    await held.release();
    await Promise.all(waits);
    assert.deepEqual(order, [0, 1, 2, 3, 4, 5]);
  });

  void it('hands the lock to the head of the queue: a newcomer never barges in', async () => {
    const [a, b] = await pair();
    const lock = a.fairLock('no-barging');
    const held = await lock.acquire();
    const waiting = b.fairLock('no-barging').acquire();
    await waitersOf(lock, 1);
    await held.release();
    // the lock is already the waiter's (granted), even before it has claimed it
    assert.equal(await lock.tryAcquire(), null);
    const got = await waiting;
    assert.ok(got.token > held.token);
    assert.equal(await lock.tryAcquire(), null);
    await got.release();
    const again = await lock.tryAcquire();
    assert.ok(again);
    await again.release();
  });

  void it('a hand-off is held on arrival of its message; the claim that follows gives the full lease and count', async () => {
    const [a, b] = await pair();
    const lock = a.fairLock('instant');
    // 1. hand-off, then the new holder releases at once: the release waits for the claim and succeeds
    let held = await lock.acquire();
    let waiting = b.fairLock('instant').acquire({ lease: 20_000 });
    await waitersOf(lock, 1);
    await held.release();
    let got = await waiting;
    assert.ok(got.token > held.token);
    assert.equal(got.holdCount, 1);
    assert.equal(got.lost, false);
    await got.release();
    assert.equal(await lock.isLocked(), false);
    // 2. hand-off, then Redis is read: the grant was claimed (hold count 1) with the holder's own 20 s lease, not
    //    the short first lease it started on; a re-entry counts on top of it
    held = await lock.acquire();
    const other = b.fairLock('instant');
    waiting = other.acquire({ lease: 20_000, owner: 'handed' });
    await waitersOf(lock, 1);
    await held.release();
    got = await waiting;
    // held before its claim ran: read on the holder's own connection, which sends the claim only after this (a
    // PostgreSQL pool runs the read and the claim on two connections at once, in either order: there it is granted or
    // claimed, never more)
    const early = await other.inspect();
    assert.equal(early.owner, 'handed');
    if (ctx.adapter.postgres) assert.ok(early.holdCount <= 1, `hold count ${early.holdCount} before the re-entry`);
    else assert.equal(early.holdCount, 0, 'the waiter held the lock from the hand-off message, before claiming it');
    const inner = await other.acquire({ owner: 'handed', timeout: 0 });
    assert.equal(inner.holdCount, 2);
    const info = await lock.inspect();
    assert.equal(info.owner, 'handed');
    assert.equal(info.holdCount, 2);
    assert.equal(info.token, got.token);
    assert.ok((info.remainingTtl ?? 0) > 15_000, `remaining ${info.remainingTtl} ms`);
    await inner.release();
    await got.release();
    assert.equal(await lock.isLocked(), false);
  });

  void it('mutual exclusion: concurrent read-modify-write across two clients loses no update', async () => {
    const [a, b] = await pair();
    let inside = 0;
    let maxInside = 0;
    let counter = 0;
    const work = async (hf: Holdfast): Promise<void> => {
      await hf.fairLock('mutex').withLock(async () => {
        inside++;
        maxInside = Math.max(maxInside, inside);
        const read = counter;
        await sleep(1);
        counter = read + 1;
        inside--;
      });
    };
    await Promise.all(Array.from({ length: 30 }, (_, i) => work(i % 2 ? a : b)));
    assert.equal(counter, 30);
    assert.equal(maxInside, 1);
  });

  void it('a timed-out or aborted wait leaves the queue, and the lock goes to the next live waiter', async () => {
    const [a, b] = await pair();
    const lock = a.fairLock('give-up');
    const held = await lock.acquire();
    const timedOut = b.fairLock('give-up').acquire({ timeout: 150 });
    await waitersOf(lock, 1);
    const controller = new AbortController();
    const aborted = b.fairLock('give-up').acquire({ signal: controller.signal });
    await waitersOf(lock, 2);
    const last = a.fairLock('give-up').acquire();
    await waitersOf(lock, 3);
    await assert.rejects(timedOut, AcquireTimeoutError);
    controller.abort(new Error('stop'));
    await assert.rejects(aborted, /stop/);
    const info = await lock.inspect();
    assert.equal(info.waiters.length, 1);
    assert.equal(info.queueLength, 1);
    await held.release();
    const got = await last;
    await got.release();
    assert.deepEqual((await lock.inspect()).waiters, []);
    assert.equal((await lock.inspect()).queueLength, 0);
  });

  void it('tryAcquire never joins the queue', async () => {
    const [a, b] = await pair();
    const held = await a.fairLock('try').acquire();
    assert.equal(await b.fairLock('try').tryAcquire(), null);
    assert.equal((await a.fairLock('try').inspect()).queueLength, 0);
    await held.release();
  });

  void it('forceUnlock and close() hand the lock on to the next waiter', async () => {
    const [a, b] = await pair();
    const lock = a.fairLock('handover');
    await lock.acquire();
    const next = b.fairLock('handover').acquire();
    await waitersOf(lock, 1);
    assert.equal(await lock.forceUnlock(), true);
    const got = await next;
    const third = a.fairLock('handover').acquire();
    await waitersOf(lock, 1);
    await b.close();
    const last = await third;
    assert.ok(last.token > got.token);
    await assert.rejects(got.release(), LockNotHeldError);
    await last.release();
  });

  void it('rejects bad input before any Redis call', async () => {
    const hf = await client();
    assert.throws(() => hf.fairLock(''), RangeError);
    assert.throws(() => hf.fairLock(42 as unknown as string), TypeError);
    assert.throws(() => hf.fairLock('x', { waiterTimeout: 5 }), RangeError);
    assert.throws(() => hf.fairLock('x', { waiterTimeout: 1.5 }), RangeError);
    assert.throws(() => hf.fairLock('x', { waiterTimout: 500 } as never), TypeError);
    const lock = hf.fairLock('x');
    await assert.rejects(lock.acquire({ timeout: -1 }), RangeError);
    await assert.rejects(lock.acquire({ lease: 0 }), RangeError);
    await assert.rejects(lock.acquire({ leaseMs: 10 } as never), TypeError);
    await assert.rejects(lock.acquire({ owner: '' }), RangeError);
    await assert.rejects(lock.acquire({ signal: 'no' as never }), TypeError);
    await assert.rejects(lock.withLock('fn' as never), TypeError);
  });
});

/**
 * Where the tests below run: the redis-server of this file (the parent on the first Redis adapter, the waiter processes
 * on each Redis adapter in turn, recording their order in a Redis list), and PostgreSQL when the postgres adapter is
 * selected (a schema of the file's own; the order is that of the fencing tokens the waiters printed).
 */
interface StoreCase {
  label: string;
  adapter: AdapterCase;
  children: AdapterCase[];
  url: () => string;
  /** The ids of the waiters that held the lock, in the order they did (call it once they have exited). */
  order: (holdfast: Holdfast, procs: Record<string, WaiterProcess>) => Promise<unknown>;
}
const redisChildren = adapters.filter((a) => !a.inProcess && !a.postgres);
const pgAdapter = adapters.find((a) => a.postgres);
let pgSchema: string | undefined;
const storeCases: StoreCase[] = [
  {
    label: 'redis',
    adapter: serverAdapter,
    children: redisChildren.length > 0 ? redisChildren : [serverAdapter],
    url: () => server.url,
    order: (holdfast) => holdfast.core.command(['LRANGE', `${holdfast.settings.prefix}order`, '0', '-1']),
  },
];
if (pgAdapter) {
  storeCases.push({
    label: 'postgres',
    adapter: pgAdapter,
    children: [pgAdapter],
    url: () => {
      const u = new URL(POSTGRES_URL);
      u.searchParams.set('holdfast_schema', (pgSchema ??= createTestSchema('fair procs')));
      return u.toString();
    },
    order: (_holdfast, procs) =>
      Promise.resolve(
        Object.entries(procs)
          .flatMap(([id, p]) => {
            const token = p.token();
            return token === undefined ? [] : [{ id, token }];
          })
          .sort((a, b) => a.token - b.token)
          .map((e) => e.id),
      ),
  });
  after(async () => {
    if (pgSchema !== undefined) await dropSchema(pgSchema);
  });
}

for (const store of storeCases) {
  void describe(`FairLock across OS processes (${store.label})`, () => {
    // Child processes use each adapter of the store in turn; the parent holds and inspects with the first.
    const { adapter, children } = store;
    const pool: WaiterProcess[] = [];
    const take = (): WaiterProcess => {
      const p = pool.shift();
      if (!p) throw new Error('process pool exhausted');
      return p;
    };
    before(async () => {
      for (let i = 0; i < 9; i++) pool.push(waiterProcess((children[i % children.length] ?? adapter).name, store.url()));
      await Promise.all(pool.map((p) => p.ready));
    });
    after(() => {
      for (const p of pool) p.child.kill('SIGKILL');
    });

    void it('waiters in different processes get the lock in the order they queued', async () => {
      const { holdfast, dispose } = await makeHoldfast(adapter, store.url());
      try {
        const prefix = holdfast.settings.prefix;
        const lock = holdfast.fairLock('fifo-procs');
        const held = await lock.acquire();
        // start the processes together (start-up is slow), then let them queue one after the other
        const procs = [take(), take(), take()];
        const ids = ['2', '0', '1'];
        for (const [n, p] of procs.entries()) {
          p.go({ prefix, name: 'fifo-procs', id: ids[n] ?? '', waiterTimeout: 5000, holdMs: 20 });
          await until(async () => (await lock.inspect()).waiters.length === n + 1, 15_000, `waiter ${n} queued`);
        }
        await held.release();
        assert.deepEqual(
          await Promise.all(procs.map((p) => p.exited)),
          procs.map(() => 0),
        );
        assert.deepEqual(await store.order(holdfast, Object.fromEntries(ids.map((id, n) => [id, procs[n]!]))), ['2', '0', '1']);
      } finally {
        await dispose();
      }
    });

    void it('skips a waiter killed with SIGKILL within the waiterTimeout bound', async () => {
      const waiterTimeout = 1000;
      const { holdfast, dispose } = await makeHoldfast(adapter, store.url());
      try {
        const prefix = holdfast.settings.prefix;
        const lock = holdfast.fairLock('crash', { waiterTimeout });
        const held = await lock.acquire();
        const [victim, survivor] = [take(), take()];
        victim.go({ prefix, name: 'crash', id: 'victim', waiterTimeout, holdMs: 0 });
        await until(async () => (await lock.inspect()).waiters.length === 1, 15_000, 'victim queued');
        survivor.go({ prefix, name: 'crash', id: 'survivor', waiterTimeout, holdMs: 0 });
        await until(async () => (await lock.inspect()).waiters.length === 2, 15_000, 'survivor queued');
        victim.child.kill('SIGKILL');
        await victim.exited;
        // Release at once: the victim's client still counts as alive, so the lock is granted to the dead victim; the
        // grant must lapse and pass on to the survivor within the bound.
        const released = Date.now();
        await held.release();
        const acquiredAt = await survivor.acquired;
        assert.equal(await survivor.exited, 0);
        const took = acquiredAt - released;
        // the bound is about 0.8 × waiterTimeout; allow for a loaded machine and process start-up noise
        assert.ok(took <= waiterTimeout + 500, `survivor waited ${took} ms after the release`);
        assert.deepEqual(await store.order(holdfast, { victim, survivor }), ['survivor']);
        assert.equal((await lock.inspect()).queueLength, 0);
      } finally {
        await dispose();
      }
    });

    void it('a dead waiter deep in the queue is skipped without delay once its client counts as dead', async () => {
      const waiterTimeout = 500;
      const { holdfast, dispose } = await makeHoldfast(adapter, store.url());
      try {
        const prefix = holdfast.settings.prefix;
        const lock = holdfast.fairLock('crash-deep', { waiterTimeout });
        const held = await lock.acquire();
        const [victim, survivor] = [take(), take()];
        victim.go({ prefix, name: 'crash-deep', id: 'victim', waiterTimeout, holdMs: 0 });
        await until(async () => (await lock.inspect()).waiters.length === 1, 15_000, 'victim queued');
        survivor.go({ prefix, name: 'crash-deep', id: 'survivor', waiterTimeout, holdMs: 0 });
        await until(async () => (await lock.inspect()).waiters.length === 2, 15_000, 'survivor queued');
        victim.child.kill('SIGKILL');
        await victim.exited;
        // after 0.6 × waiterTimeout without a heartbeat the victim is no longer listed as a live waiter
        await until(async () => (await lock.inspect()).waiters.length === 1, 2000, 'victim counted dead');
        const released = Date.now();
        await held.release();
        const took = (await survivor.acquired) - released;
        assert.ok(took < 300, `survivor waited ${took} ms after the release`);
        assert.equal(await survivor.exited, 0);
      } finally {
        await dispose();
      }
    });

    void it('a waiter whose process was frozen past its alive time is skipped, and queues again when it resumes', async () => {
      const waiterTimeout = 500;
      const { holdfast, dispose } = await makeHoldfast(adapter, store.url());
      try {
        const prefix = holdfast.settings.prefix;
        const lock = holdfast.fairLock('frozen', { waiterTimeout });
        const held = await lock.acquire();
        const [sleeper, other] = [take(), take()];
        sleeper.go({ prefix, name: 'frozen', id: 'sleeper', waiterTimeout, holdMs: 0 });
        await until(async () => (await lock.inspect()).waiters.length === 1, 15_000, 'sleeper queued');
        other.go({ prefix, name: 'frozen', id: 'other', waiterTimeout, holdMs: 0 });
        await until(async () => (await lock.inspect()).waiters.length === 2, 15_000, 'other queued');
        sleeper.child.kill('SIGSTOP');
        try {
          await until(async () => (await lock.inspect()).waiters.length === 1, 3000, 'sleeper counted dead');
          await held.release();
          await other.acquired;
        } finally {
          sleeper.child.kill('SIGCONT');
        }
        // resumed: its heartbeat learns it was counted dead, its waiter queues again and gets the lock
        await sleeper.acquired;
        assert.deepEqual(await Promise.all([sleeper.exited, other.exited]), [0, 0]);
        assert.deepEqual(await store.order(holdfast, { sleeper, other }), ['other', 'sleeper']);
      } finally {
        await dispose();
      }
    });
  });

  void describe(`FairLock hand-offs under frequent heartbeats (${store.label})`, () => {
    // A heartbeat whose reply names a grant to a waiter of its client that no longer waits passes the grant on. A waiter
    // that holds from the hand-off message has stopped waiting before its claim lands: the heartbeat must leave it be.
    void it('never has two holders while each client has several waiters and beats every 20 ms', async () => {
      const made = await Promise.all([0, 1].map(() => makeHoldfast(store.adapter, store.url(), { prefix: 'fair-beat:' })));
      try {
        let inside = 0;
        let overlaps = 0;
        let acquisitions = 0;
        let late = 0;
        // enough hand-offs to mean something (200), however slow the machine; 3 s when it is fast, 30 s at most
        const soonest = performance.now() + 3000;
        const latest = performance.now() + 30_000;
        await Promise.all(
          made.flatMap(({ holdfast }) =>
            [0, 1, 2].map(async () => {
              const lock = holdfast.fairLock('beat', { waiterTimeout: 100 });
              while (performance.now() < soonest || (acquisitions < 200 && performance.now() < latest)) {
                const held = await lock.acquire({ timeout: 5000 });
                if (++inside > 1) overlaps++;
                acquisitions++;
                await sleep(Math.random() < 0.5 ? 0 : 1);
                inside--;
                // With a 100 ms waiterTimeout a grant lives 20–60 ms: on a loaded machine a claim can come too late, and
                // the hold is then lost (its release says so). That is liveness; the point here is safety.
                await held.release().catch((error: unknown) => {
                  if (!(error instanceof LockNotHeldError)) throw error;
                  late++;
                });
              }
            }),
          ),
        );
        assert.equal(overlaps, 0, `${overlaps} overlaps in ${acquisitions} acquisitions (${late} claims too late)`);
        assert.ok(acquisitions > 100, `only ${acquisitions} acquisitions`);
      } finally {
        await Promise.all(made.map((m) => m.dispose()));
      }
    });
  });
}

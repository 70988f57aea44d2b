/**
 * What a release tells must be true, on every client: a retried release whose first try may never have reached Redis,
 * and whose lease lapsed meanwhile, rejects with `LockNotHeldError`; a release is final (no renewal of its hold runs
 * after it, so nothing is left held once `release()` resolved).
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { Redis } from 'ioredis';
import { LockNotHeldError, type Holdfast, type PermitExpirableSemaphore } from '../../src/index.js';
import { openLeftBehind, type LeftBehind } from '../support/left-behind.js';
import { redlockNodes } from '../support/redlock.js';
import { describeEachAdapter, sleep } from '../support/suite.js';

describeEachAdapter('A release tells the truth', (ctx) => {
  test('Redis SIGSTOPped across the lease: the retried release rejects LOCK_NOT_HELD', async (t) => {
    if (!ctx.requireServer(t, 'pauses the redis-server process with SIGSTOP')) return;
    const a = (await ctx.open({ prefix: 'truth:', watchdogLease: 1000, commandTimeout: 1000 })).holdfast;
    const b = (await ctx.open({ prefix: 'truth:' })).holdfast;
    const name = `lapsed-${ctx.adapter.name}`;
    const held = await a.lock(name).acquire();
    ctx.server.pause();
    let released: Promise<unknown>;
    try {
      released = held.release().then(
        () => 'resolved',
        (error: unknown) => error,
      );
      // the first try times out at 1000 ms; the lease (1000 ms, from the last renewal) lapses meanwhile
      while (!held.signal.aborted) await sleep(20);
      await sleep(150); // past the lease in Redis too
    } finally {
      ctx.server.resume();
    }
    const second = await b.lock(name).acquire({ timeout: 5000 });
    const outcome = await released;
    assert.ok(outcome instanceof LockNotHeldError, `release() ${outcome instanceof Error ? `rejected with ${outcome.name}` : String(outcome)}`);
    assert.match(outcome.message, /lease lapsed before the release reached Redis/);
    assert.equal((await b.lock(name).inspect()).owner, second.owner, "the next owner's lock is untouched");
    await second.release();
  });
});

/** Reads what is left of a name on one node (the fencing counters, which persist by design, excluded). */
type Left = (name: string) => Promise<string[]>;

/** Keys left under `pattern` on a Redis node (the fencing counters excluded). */
const keysLeft =
  (direct: Redis, pattern: (name: string) => string): Left =>
  async (name) =>
    (await direct.keys(pattern(name))).filter((k) => !k.endsWith(':fence'));

/**
 * Releases at the watchdog's tick: `rounds` holds in `streams` parallel streams, each released `at` ms after it was
 * acquired (around the 80 ms renewal), then what is left of the name is read on every node right after `release()`
 * resolved.
 */
async function releaseAtTheTick(nodes: readonly Left[], rounds: number, take: (name: string) => Promise<{ release(): Promise<void> }>): Promise<string[]> {
  const left: string[] = [];
  const streams = 10;
  await Promise.all(
    Array.from({ length: streams }, async (_, s) => {
      for (let i = s; i < rounds; i += streams) {
        const name = `tick-${i}`;
        const held = await take(name);
        await sleep(76 + (i % 8)); // 76–83 ms: before, at and after the 80 ms renewal
        await held.release();
        for (const node of nodes) left.push(...(await node(name)));
      }
    }),
  );
  return left;
}

const ROUNDS = 200;

describeEachAdapter(
  'A release is final (Redlock, 3 masters)',
  (ctx) => {
    const nodes = redlockNodes(ctx, 'final:');
    const direct: Redis[] = [];
    before(() => {
      for (const s of ctx.servers) direct.push(new Redis(s.url));
    });
    after(() => {
      for (const d of direct) d.disconnect();
    });

    test(`Redlock: ${ROUNDS} releases at the renewal tick leave no key on any node`, async () => {
      const redlock = nodes.make({ watchdogInterval: 80 });
      const left = await releaseAtTheTick(
        direct.map((d) => keysLeft(d, (n) => `${redlock.keys.prefix}{${n}}:*`)),
        ROUNDS,
        (n) => redlock.lock(n).acquire(),
      );
      assert.deepEqual(left, []);
    });

    test(`Redlock semaphore: ${ROUNDS} releases at the renewal tick leave no permit on any node`, async () => {
      const redlock = nodes.make({ watchdogInterval: 80 });
      const left = await releaseAtTheTick(
        direct.map((d) => keysLeft(d, (n) => `${redlock.keys.prefix}{${n}}:*`)),
        ROUNDS,
        (n) => redlock.semaphore(n, { permits: 2 }).acquire(),
      );
      assert.deepEqual(left, []);
    });
  },
  { servers: 3, notOnPostgres: 'Redlock needs a quorum of independent Redis servers: it has no meaning on one PostgreSQL' },
);

describeEachAdapter('A release is final (single Redis)', (ctx) => {
  let store: LeftBehind;
  before(async () => {
    store = await openLeftBehind(ctx);
  });
  after(async () => {
    await store.close();
  });
  /** What is left of a name of `h` (on PostgreSQL: rows naming its records; tokens come from one sequence there). */
  const leftOf =
    (h: Holdfast): Left =>
    async (name) =>
      (await store.under(`${h.core.keys.prefix}{${name}}:`)).filter((k) => !k.endsWith(':fence'));

  const cases: [string, (h: Holdfast, n: string) => Promise<{ release(): Promise<void> }>][] = [
    ['Lock', (h, n) => h.lock(n).acquire()],
    ['FairLock', (h, n) => h.fairLock(n).acquire()],
    ['read lock', (h, n) => h.readWriteLock(n).readLock().acquire()],
    ['write lock', (h, n) => h.readWriteLock(n).writeLock().acquire()],
  ];
  for (const [kind, take] of cases) {
    test(`${kind}: ${ROUNDS} releases at the renewal tick leave nothing held`, async () => {
      const h = (await ctx.open({ prefix: `final-${kind.replace(' ', '-')}-${Math.random().toString(36).slice(2, 6)}:`, watchdogInterval: 80 })).holdfast;
      const left = await releaseAtTheTick([leftOf(h)], ROUNDS, (n) => take(h, n));
      assert.deepEqual(left, []);
    });
  }

  test(`expirable permits: ${ROUNDS} releases at the renewal tick leave no permit held`, async () => {
    const h = (await ctx.open({ prefix: `final-permit-${Math.random().toString(36).slice(2, 6)}:`, watchdogInterval: 80 })).holdfast;
    const sems = new Map<string, PermitExpirableSemaphore>();
    const left = await releaseAtTheTick(
      [async () => []],
      ROUNDS,
      async (n) => {
        const sem = h.permitExpirableSemaphore(n);
        sems.set(n, sem);
        await sem.trySetPermits(1);
        return sem.acquire();
      },
    );
    assert.deepEqual(left, []);
    for (const [n, sem] of sems) assert.equal(await sem.availablePermits(), 1, `permit of ${n} back`);
  });
});

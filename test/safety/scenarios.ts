/**
 * The fault scenarios (the map is `research/correctness.md` §5). Each names its lock backend, its servers, its worker
 * settings and a nemesis: an async function that injects faults through the {@link NemesisContext} until the
 * scenario's time is up, logging every fault it injects. Adding a scenario (a Sentinel failover, a
 * ZooKeeper session expiry…) is adding an entry here; adding a backend is a function in backends.ts.
 *
 * @module
 */
import type { RedisCluster } from '../support/cluster.js';
import type { FaultProxy } from '../support/fault-proxy.js';
import type { WorkerProcess } from '../support/processes.js';
import type { RedisServer } from '../support/redis-server.js';
import { scripts } from '../../src/lua/scripts.gen.js';
import { slotKeysWithoutTtl, type NamePlanSpec } from './cluster.js';
import type { NemesisEvent } from './history.js';
import type { NamesConfig, WorkerConfig, WorkerMessage } from './protocol.js';

/** A worker as the nemesis sees it. */
export interface WorkerHandle {
  id: string;
  process: WorkerProcess<WorkerMessage>;
  /** One proxy per lock server, in server order (none on a Cluster: workers reach its nodes directly). */
  proxies: FaultProxy[];
}

export interface NemesisContext {
  random: () => number;
  /** Lock servers (not the oracle); empty for a Cluster scenario. */
  servers: RedisServer[];
  /** A Cluster scenario's cluster and the slots its names were planned to crowd (see {@link ClusterSpec}). */
  cluster?: { cluster: RedisCluster; slots: number[] };
  workers: () => WorkerHandle[];
  /** True once the scenario's time is up: a nemesis loop ends then. */
  done: () => boolean;
  /** Sleeps, cut short when the scenario ends. */
  sleep: (ms: number) => Promise<void>;
  /** The worker that holds the lock now, waiting up to `timeoutMs` for one. */
  holder: (timeoutMs: number) => Promise<WorkerHandle | undefined>;
  /** Reference time now. */
  now: () => number;
  record: (event: Omit<NemesisEvent, 'type'>) => void;
  /** Starts a replacement worker (after a kill). */
  spawn: () => Promise<WorkerHandle>;
  /** Fails the scenario with this reason (a property the nemesis itself watches, e.g. no grant without a majority). */
  fail: (reason: string) => void;
}

export interface Scenario {
  name: string;
  /** One line: the fault and what must hold. */
  title: string;
  backend: WorkerConfig['backend'];
  /** Number of lock servers. @default 1 */
  servers?: number;
  serverArgs?: string[];
  workers: number;
  worker: Partial<WorkerConfig>;
  /** ms of faults and load: full run, quick run (`undefined` = not in the quick subset). */
  durationMs: number;
  quickMs?: number;
  /** Grants that may run at once (a semaphore's permits; see CheckOptions.permits). @default 1 */
  permits?: number;
  /** Where tokens come from (see CheckOptions.tokenScope). @default 'single' */
  tokenScope?: 'single' | 'quorum' | 'none';
  /** A self-test: passes only if the checker sees an expected violation. */
  expectViolation?: boolean;
  /** Liveness/recovery bounds given the worker settings (ms). */
  livenessBoundMs: number;
  recoveryBoundMs?: number;
  nemesis?: (ctx: NemesisContext) => Promise<void>;
  /** A Redis Cluster instead of standalone servers (`backend` is then `holdfast-cluster`). */
  cluster?: ClusterSpec;
}

/**
 * A Redis Cluster scenario: `masters` masters, no replicas; each worker process runs `loops` loops (workers of their
 * own) on the names `names` plans, picked through a moving window (`window`, `step`, `periodMs`, `kinds`: see
 * NamesConfig); `fillers` plain keys without a TTL (outside the lock prefix) sit in each crowded slot, so that a
 * migration moves keys batch by batch and the lock keys and the counter move somewhere in the middle.
 */
export interface ClusterSpec extends Omit<NamesConfig, 'path'> {
  masters: number;
  loops: number;
  names: NamePlanSpec;
  fillers: number;
}

/** Defaults every scenario starts from. */
export const WORKER_DEFAULTS = {
  leaseMs: 1000,
  watchdog: true,
  watchdogIntervalMs: 300,
  commandTimeoutMs: 300,
  acquireTimeoutMs: 3000,
  workMs: 5,
  usesPerGrant: 2,
  useBudgetMs: 150,
  thinkMs: 5,
  stallMs: 40,
} satisfies Partial<WorkerConfig>;

/** Runs `step` until the scenario ends, with a random gap of [min, max) ms before each step. */
async function every(ctx: NemesisContext, min: number, max: number, step: () => Promise<void>): Promise<void> {
  for (;;) {
    await ctx.sleep(min + ctx.random() * (max - min));
    if (ctx.done()) return;
    await step();
  }
}

/** SIGSTOPs a worker for `ms` (a real timer: the scenario's clock may end first), SIGCONTs it, and records the pause. */
async function pauseWorker(ctx: NemesisContext, h: WorkerHandle, ms: number): Promise<void> {
  const from = ctx.now();
  h.process.pause();
  await new Promise((r) => setTimeout(r, ms));
  h.process.resume();
  ctx.record({ kind: 'pause-client', target: h.id, from, to: ctx.now() });
}

export const scenarios: Scenario[] = [
  {
    name: 'contention',
    title: 'no faults, every worker on one lock',
    backend: 'holdfast',
    workers: 8,
    worker: { workMs: 2, usesPerGrant: 3, thinkMs: 2 },
    durationMs: 15_000,
    quickMs: 4_000,
    livenessBoundMs: 2000,
  },
  {
    name: 'holder-paused',
    title: 'SIGSTOP the holder for 1.6 s (> 1 s lease), then SIGCONT',
    backend: 'holdfast',
    workers: 5,
    worker: { workMs: 80, usesPerGrant: 6, useBudgetMs: 150 },
    durationMs: 20_000,
    quickMs: 5_000,
    livenessBoundMs: 2500,
    recoveryBoundMs: 2500,
    async nemesis(ctx) {
      await every(ctx, 1000, 1500, async () => {
        const h = await ctx.holder(1000);
        if (!h) return;
        await ctx.sleep(ctx.random() * 120); // land anywhere in the hold, often mid-use
        await pauseWorker(ctx, h, 1600);
      });
    },
  },
  {
    name: 'fair-contention',
    title: 'FairLock, no faults, every worker on one lock (hand-offs held from the grant message)',
    backend: 'holdfast-fair',
    workers: 8,
    worker: { workMs: 2, usesPerGrant: 3, thinkMs: 2 },
    durationMs: 15_000,
    quickMs: 4_000,
    livenessBoundMs: 2000,
  },
  {
    name: 'fair-paused',
    title: 'FairLock: SIGSTOP the holder or a waiter for 1.6 s (> 1 s lease; a waiter past its 1.2 s alive time), then SIGCONT',
    backend: 'holdfast-fair',
    workers: 5,
    worker: { workMs: 40, usesPerGrant: 4, useBudgetMs: 150 },
    durationMs: 20_000,
    quickMs: 6_000,
    livenessBoundMs: 4000,
    recoveryBoundMs: 4000,
    async nemesis(ctx) {
      await every(ctx, 800, 1200, async () => {
        const h = ctx.random() < 0.5 ? await ctx.holder(1000) : ctx.workers()[Math.floor(ctx.random() * ctx.workers().length)];
        if (!h) return;
        await ctx.sleep(ctx.random() * 60);
        await pauseWorker(ctx, h, 1600);
      });
    },
  },
  {
    name: 'redis-paused',
    title: 'SIGSTOP the lock server for 1.5 s (> lease), then SIGCONT',
    backend: 'holdfast',
    workers: 5,
    worker: { workMs: 20, usesPerGrant: 30 },
    durationMs: 15_000,
    livenessBoundMs: 2500,
    recoveryBoundMs: 3000,
    async nemesis(ctx) {
      const server = ctx.servers[0]!;
      await every(ctx, 1500, 2500, async () => {
        const from = ctx.now();
        server.pause();
        await new Promise((r) => setTimeout(r, 1500));
        server.resume();
        ctx.record({ kind: 'pause-server', target: 'lock', from, to: ctx.now() });
      });
    },
  },
  {
    name: 'redis-restart-empty',
    title: 'kill -9 the lock server, restart at once without persistence (state and tokens lost)',
    backend: 'holdfast',
    workers: 5,
    worker: { workMs: 20, usesPerGrant: 30 },
    durationMs: 15_000,
    quickMs: 5_000,
    livenessBoundMs: 2500,
    recoveryBoundMs: 3000,
    async nemesis(ctx) {
      const server = ctx.servers[0]!;
      await every(ctx, 1500, 2500, async () => {
        const from = ctx.now();
        await server.restart();
        ctx.record({ kind: 'restart-server', target: 'lock', from, to: ctx.now(), dataLoss: true });
      });
    },
  },
  {
    name: 'redis-restart-aof',
    title: 'kill -9 the lock server, restart at once with appendfsync always (nothing lost)',
    backend: 'holdfast',
    serverArgs: ['--appendonly', 'yes', '--appendfsync', 'always'],
    workers: 5,
    worker: { workMs: 20, usesPerGrant: 30 },
    durationMs: 15_000,
    livenessBoundMs: 2500,
    recoveryBoundMs: 3000,
    async nemesis(ctx) {
      const server = ctx.servers[0]!;
      await every(ctx, 1500, 2500, async () => {
        const from = ctx.now();
        await server.restart();
        ctx.record({ kind: 'restart-server', target: 'lock', from, to: ctx.now() });
      });
    },
  },
  {
    name: 'release-cut',
    title: "cut the holder's connection right after its release is sent (reply lost)",
    backend: 'holdfast',
    workers: 5,
    worker: { workMs: 10, usesPerGrant: 3 },
    durationMs: 15_000,
    quickMs: 6_000,
    livenessBoundMs: 2500,
    recoveryBoundMs: 2500,
    async nemesis(ctx) {
      const sha = scripts['lock/release'].sha;
      await every(ctx, 300, 700, async () => {
        const h = await ctx.holder(1000);
        const proxy = h?.proxies[0];
        if (!h || !proxy) return;
        const before = proxy.cuts;
        proxy.cutAfter(sha);
        await ctx.sleep(1000);
        if (proxy.cuts > before) ctx.record({ kind: 'cut', target: h.id, from: ctx.now(), to: ctx.now() });
        proxy.heal();
      });
    },
  },
  {
    name: 'release-refused',
    title: "the holder's link goes down as its release is sent (it never reaches Redis) and stays down 0.3–0.8 s",
    backend: 'holdfast',
    workers: 4,
    worker: { workMs: 10, usesPerGrant: 3 },
    durationMs: 15_000,
    quickMs: 6_000,
    // the release is given up and the lock frees within its lease (1 s), not kept alive by the watchdog
    livenessBoundMs: 2500,
    recoveryBoundMs: 2500,
    async nemesis(ctx) {
      const sha = scripts['lock/release'].sha;
      await every(ctx, 300, 700, async () => {
        const h = await ctx.holder(1000);
        const proxy = h?.proxies[0];
        if (!h || !proxy) return;
        const before = proxy.cuts;
        proxy.cutBefore(sha);
        await ctx.sleep(1000);
        if (proxy.cuts > before) {
          const from = ctx.now();
          await ctx.sleep(300 + ctx.random() * 500);
          ctx.record({ kind: 'cut', target: h.id, from, to: ctx.now() });
        }
        proxy.heal();
      });
    },
  },
  {
    name: 'slow-extend',
    title: 'fixed 400 ms lease extended near its end through a proxy adding 0–60 ms per request',
    backend: 'holdfast',
    workers: 5,
    worker: { watchdog: false, leaseMs: 400, workMs: 30, usesPerGrant: 40, useBudgetMs: 60, extendNearEnd: { times: 3, earlyMs: 40, lateMs: 20 } },
    durationMs: 15_000,
    livenessBoundMs: 1500,
    async nemesis(ctx) {
      const from = ctx.now();
      for (const w of ctx.workers()) for (const p of w.proxies) p.delay('up', 30, 30);
      while (!ctx.done()) await ctx.sleep(200);
      ctx.record({ kind: 'delay', target: 'all', from, to: ctx.now() });
    },
  },
  {
    name: 'holder-partitioned',
    title: "black-hole the holder's link to Redis for 1.5 s (renewals fail)",
    backend: 'holdfast',
    workers: 5,
    worker: { workMs: 20, usesPerGrant: 40 },
    durationMs: 15_000,
    livenessBoundMs: 2500,
    recoveryBoundMs: 2500,
    async nemesis(ctx) {
      await every(ctx, 1000, 1500, async () => {
        const h = await ctx.holder(1000);
        const proxy = h?.proxies[0];
        if (!h || !proxy) return;
        const from = ctx.now();
        proxy.blackhole('up');
        proxy.blackhole('down');
        await new Promise((r) => setTimeout(r, 1500));
        proxy.heal();
        proxy.cut(); // half-dead connections: let the client reconnect
        ctx.record({ kind: 'blackhole', target: h.id, from, to: ctx.now() });
      });
    },
  },
  {
    name: 'crashed-holder',
    title: 'kill -9 the holder (no release); a replacement worker starts',
    backend: 'holdfast',
    workers: 5,
    worker: { workMs: 20, usesPerGrant: 20 },
    durationMs: 15_000,
    quickMs: 5_000,
    // a waiter sleeps at most the holder's remaining lease (the retry hint), then acquires
    livenessBoundMs: 1000 + 700,
    async nemesis(ctx) {
      await every(ctx, 800, 1500, async () => {
        const h = await ctx.holder(1000);
        if (!h) return;
        await ctx.sleep(ctx.random() * 30);
        const from = ctx.now();
        await h.process.kill();
        ctx.record({ kind: 'kill-client', target: h.id, from, to: ctx.now() });
        await ctx.spawn();
      });
    },
  },
  {
    name: 'election-faults',
    title: 'Election: the leader is paused (SIGSTOP 1.6 s > 1 s lease), killed (-9, a replacement starts) or cut off (black hole 1.5 s), at random',
    backend: 'holdfast-election',
    workers: 5,
    worker: { workMs: 20, usesPerGrant: 20, useBudgetMs: 150 },
    durationMs: 20_000,
    quickMs: 6_000,
    // a candidate looks again when the leader's lease runs out (an expiry publishes nothing), then leads
    livenessBoundMs: 2500,
    recoveryBoundMs: 2500,
    async nemesis(ctx) {
      await every(ctx, 1000, 1500, async () => {
        const h = await ctx.holder(1000);
        if (!h) return;
        await ctx.sleep(ctx.random() * 60); // land anywhere in the term, often mid-use
        const fault = ctx.random();
        if (fault < 0.4) {
          await pauseWorker(ctx, h, 1600);
        } else if (fault < 0.7) {
          const from = ctx.now();
          await h.process.kill();
          ctx.record({ kind: 'kill-client', target: h.id, from, to: ctx.now() });
          await ctx.spawn();
        } else {
          const proxy = h.proxies[0];
          if (!proxy) return;
          const from = ctx.now();
          proxy.blackhole('up');
          proxy.blackhole('down');
          await new Promise((r) => setTimeout(r, 1500));
          proxy.heal();
          proxy.cut(); // half-dead connections: let the client reconnect
          ctx.record({ kind: 'blackhole', target: h.id, from, to: ctx.now() });
        }
      });
    },
  },
  {
    name: 'majority-node-loss',
    title: '3-node majority lock: one node (minority) or two (majority) killed, restarted empty only after more than a lease',
    backend: 'majority',
    servers: 3,
    // per-node counters diverge even without faults: a naive majority lock has no token order to check
    tokenScope: 'none',
    workers: 4,
    worker: { watchdog: false, leaseMs: 1000, workMs: 20, usesPerGrant: 20, useBudgetMs: 150, acquireTimeoutMs: 1000 },
    durationMs: 15_000,
    livenessBoundMs: 3000,
    recoveryBoundMs: 3000,
    async nemesis(ctx) {
      await every(ctx, 500, 1000, async () => {
        const count = ctx.random() < 0.5 ? 1 : 2;
        const order = [...ctx.servers].sort(() => ctx.random() - 0.5).slice(0, count);
        const from = ctx.now();
        await Promise.all(order.map((n) => n.kill()));
        // Delayed restart ([RD]): back after more than a lease, no lock it granted can still be live.
        await new Promise((r) => setTimeout(r, 1500));
        await Promise.all(order.map((n) => n.launch()));
        ctx.record({ kind: 'kill-server', target: `${count} of 3 nodes`, from, to: ctx.now() });
      });
    },
  },
  {
    name: 'selftest-majority-restart',
    title: 'self-test: 3-node majority lock; a node of the holder’s quorum restarts empty at once (double grant possible)',
    backend: 'majority',
    servers: 3,
    tokenScope: 'quorum',
    workers: 4,
    worker: { watchdog: false, leaseMs: 3000, workMs: 100, usesMin: 18, usesPerGrant: 22, useBudgetMs: 200, acquireTimeoutMs: 1000 },
    durationMs: 15_000,
    quickMs: 10_000,
    expectViolation: true,
    livenessBoundMs: 5000,
    recoveryBoundMs: 5000,
    async nemesis(ctx) {
      // Node A stays up throughout; B restarts empty at once; C is down, then back empty.
      const [, b, c] = ctx.servers;
      if (!b || !c) return;
      await every(ctx, 500, 1000, async () => {
        // Take C down: the next grant's quorum is exactly {A, B}.
        const from = ctx.now();
        await c.kill();
        const killed = ctx.now();
        let h = await ctx.holder(0);
        if (h) await h.process.waitFor((m) => m.t === 'free', 4000).catch(() => {});
        h = await ctx.holder(4000);
        if (!h) {
          await c.launch();
          ctx.record({ kind: 'kill-server', target: 'node-c', from, to: ctx.now() });
          return;
        }
        await ctx.sleep(200);
        // B loses the holder's key on an immediate restart; C comes back empty too: {B, C} is a free majority.
        const restart = ctx.now();
        await Promise.all([b.restart(), c.launch()]);
        ctx.record({ kind: 'restart-server', target: 'node-b', from: restart, to: ctx.now(), dataLoss: true });
        ctx.record({ kind: 'kill-server', target: 'node-c', from: killed, to: ctx.now(), dataLoss: true });
        await ctx.sleep(3500); // let the double grant happen and the leases run out
      });
    },
  },
  {
    name: 'redlock-minority-loss',
    title: "holdfast Redlock, 5 nodes (AOF always): kill -9 two nodes for 1–2 s, then restart them; watchdog renews by quorum",
    backend: 'redlock',
    servers: 5,
    serverArgs: ['--appendonly', 'yes', '--appendfsync', 'always'],
    // nothing is lost (fsync'd AOF): the fencing round must keep tokens strictly increasing across every quorum
    tokenScope: 'quorum',
    workers: 4,
    worker: { workMs: 20, usesPerGrant: 20, acquireTimeoutMs: 3000 },
    durationMs: 15_000,
    quickMs: 4_000,
    livenessBoundMs: 2500,
    recoveryBoundMs: 2500,
    async nemesis(ctx) {
      await every(ctx, 500, 1000, async () => {
        const picked = [...ctx.servers].sort(() => ctx.random() - 0.5).slice(0, 2);
        const from = ctx.now();
        await Promise.all(picked.map((n) => n.kill()));
        await new Promise((r) => setTimeout(r, 1000 + ctx.random() * 1000));
        await Promise.all(picked.map((n) => n.launch()));
        ctx.record({ kind: 'kill-server', target: `2 of 5 nodes (${picked.map((n) => n.port).join(', ')})`, from, to: ctx.now() });
      });
    },
  },
  {
    name: 'redlock-majority-loss',
    title: 'holdfast Redlock, 5 nodes (AOF always): kill -9 three nodes for 2 s: no grant without a majority, the holder learns it lost the lock, liveness returns after restart',
    backend: 'redlock',
    servers: 5,
    serverArgs: ['--appendonly', 'yes', '--appendfsync', 'always'],
    tokenScope: 'quorum',
    workers: 4,
    worker: { workMs: 20, usesPerGrant: 20, acquireTimeoutMs: 1500 },
    durationMs: 15_000,
    livenessBoundMs: 2500,
    recoveryBoundMs: 3000,
    async nemesis(ctx) {
      await every(ctx, 1000, 1500, async () => {
        const picked = [...ctx.servers].sort(() => ctx.random() - 0.5).slice(0, 3);
        const from = ctx.now();
        await Promise.all(picked.map((n) => n.kill()));
        // An attempt whose quorum answered before the kill may still return (acquire + fence rounds, ≤ 2 × nodeTimeout).
        const quietFrom = ctx.now() + 300;
        const offs = ctx.workers().map((w) =>
          w.process.onMessage((m) => {
            if (m.t === 'held' && ctx.now() > quietFrom) ctx.fail(`false success: ${w.id} got ${m.grant} while 3 of 5 nodes were down`);
          }),
        );
        await new Promise((r) => setTimeout(r, 2000));
        for (const off of offs) off();
        await Promise.all(picked.map((n) => n.launch()));
        ctx.record({ kind: 'kill-server', target: '3 of 5 nodes', from, to: ctx.now() });
      });
    },
  },
  {
    name: 'redlock-selftest-restart-empty',
    title: 'self-test: holdfast Redlock, 3 nodes, no persistence: a node of the holder’s quorum restarts empty at once (double grant expected)',
    backend: 'redlock',
    servers: 3,
    tokenScope: 'quorum',
    workers: 4,
    worker: { watchdog: false, leaseMs: 3000, workMs: 100, usesMin: 18, usesPerGrant: 22, useBudgetMs: 200, acquireTimeoutMs: 1000 },
    durationMs: 15_000,
    expectViolation: true,
    livenessBoundMs: 5000,
    recoveryBoundMs: 5000,
    async nemesis(ctx) {
      // As selftest-majority-restart: A stays up; C down forces the next quorum to be {A, B}; then B restarts empty at
      // once and C comes back empty, so {B, C} is a free majority the waiting contenders win while the holder holds.
      const [, b, c] = ctx.servers;
      if (!b || !c) return;
      await every(ctx, 300, 600, async () => {
        const from = ctx.now();
        await c.kill();
        const killed = ctx.now();
        let h = await ctx.holder(0);
        if (h) await h.process.waitFor((m) => m.t === 'free', 4000).catch(() => {});
        h = await ctx.holder(4000);
        if (!h) {
          await c.launch();
          ctx.record({ kind: 'kill-server', target: 'node-c', from, to: ctx.now() });
          return;
        }
        await ctx.sleep(200);
        const restart = ctx.now();
        await Promise.all([b.restart(), c.launch()]);
        ctx.record({ kind: 'restart-server', target: 'node-b', from: restart, to: ctx.now(), dataLoss: true });
        ctx.record({ kind: 'kill-server', target: 'node-c', from: killed, to: ctx.now(), dataLoss: true });
        await ctx.sleep(3500); // let the double grant happen and the leases run out
      });
    },
  },
  {
    name: 'redlock-semaphore-minority-loss',
    title: 'holdfast Redlock semaphore of 2 permits, 5 nodes (AOF always), 5 workers: kill -9 two nodes for 1–2 s, then restart them; never 3 holders at once',
    backend: 'redlock-semaphore',
    permits: 2,
    servers: 5,
    serverArgs: ['--appendonly', 'yes', '--appendfsync', 'always'],
    tokenScope: 'none',
    workers: 5,
    worker: { workMs: 20, usesPerGrant: 20, acquireTimeoutMs: 3000 },
    durationMs: 15_000,
    livenessBoundMs: 2500,
    recoveryBoundMs: 2500,
    async nemesis(ctx) {
      await every(ctx, 500, 1000, async () => {
        const picked = [...ctx.servers].sort(() => ctx.random() - 0.5).slice(0, 2);
        const from = ctx.now();
        await Promise.all(picked.map((n) => n.kill()));
        await new Promise((r) => setTimeout(r, 1000 + ctx.random() * 1000));
        await Promise.all(picked.map((n) => n.launch()));
        ctx.record({ kind: 'kill-server', target: `2 of 5 nodes (${picked.map((n) => n.port).join(', ')})`, from, to: ctx.now() });
      });
    },
  },
  {
    name: 'redlock-semaphore-majority-loss',
    title: 'holdfast Redlock semaphore of 2 permits, 5 nodes (AOF always), 5 workers: kill -9 three nodes for 2 s: no grant without a majority, never 3 holders at once, liveness returns after restart',
    backend: 'redlock-semaphore',
    permits: 2,
    servers: 5,
    serverArgs: ['--appendonly', 'yes', '--appendfsync', 'always'],
    tokenScope: 'none',
    workers: 5,
    worker: { workMs: 20, usesPerGrant: 20, acquireTimeoutMs: 1500 },
    durationMs: 15_000,
    livenessBoundMs: 2500,
    recoveryBoundMs: 3000,
    async nemesis(ctx) {
      await every(ctx, 1000, 1500, async () => {
        const picked = [...ctx.servers].sort(() => ctx.random() - 0.5).slice(0, 3);
        const from = ctx.now();
        await Promise.all(picked.map((n) => n.kill()));
        // An attempt whose majority answered before the kill may still return (one round, ≤ nodeTimeout).
        const quietFrom = ctx.now() + 300;
        const offs = ctx.workers().map((w) =>
          w.process.onMessage((m) => {
            if (m.t === 'held' && ctx.now() > quietFrom) ctx.fail(`false success: ${w.id} got ${m.grant} while 3 of 5 nodes were down`);
          }),
        );
        await new Promise((r) => setTimeout(r, 2000));
        for (const off of offs) off();
        await Promise.all(picked.map((n) => n.launch()));
        ctx.record({ kind: 'kill-server', target: '3 of 5 nodes', from, to: ctx.now() });
      });
    },
  },
  {
    name: 'slot-migration-names',
    title:
      'Redis Cluster, 3 masters: Lock, FairLock and write lock on 3,000 names (400 in each of 3 slots, 10 in each of 20 more), loops of 6 worker processes on ioredis and node-redis; the 3 slots migrated key by key back and forth between masters',
    backend: 'holdfast-cluster',
    workers: 6,
    worker: { workMs: 3, usesMin: 1, usesPerGrant: 6, thinkMs: 5, commandTimeoutMs: 500 },
    cluster: {
      masters: 3,
      loops: 3,
      names: { migratingSlots: 3, perMigratingSlot: 400, sharedSlots: 20, perSharedSlot: 10, scattered: 1600 },
      // 48 names in play at a time (contended), moving on by 16 every 100 ms: about 3,000 distinct names in 20 s
      window: 48,
      step: 16,
      periodMs: 100,
      kinds: ['lock', 'lock', 'fair', 'write'],
      fillers: 60,
    },
    durationMs: 20_000,
    quickMs: 6_000,
    livenessBoundMs: 3000,
    async nemesis(ctx) {
      const c = ctx.cluster;
      if (!c) return;
      const masters = (await c.cluster.masters()).map((m) => m.port);
      let k = 0;
      let failed = false;
      await every(ctx, 100, 400, async () => {
        if (failed) return;
        // one slot after another, each to one of the two masters that do not serve it now
        const slot = c.slots[k++ % c.slots.length]!;
        const from = await c.cluster.ownerOf(slot);
        const others = masters.filter((p) => p !== from);
        const to = others[Math.floor(ctx.random() * others.length)]!;
        const start = ctx.now();
        try {
          const moved = await c.cluster.migrateSlot(slot, to, 20);
          const end = ctx.now();
          // the lock keys that moved kept their TTL (a lease must still run out)
          const { checked, without } = await slotKeysWithoutTtl(to, slot, 'safety:');
          if (without.length) ctx.fail(`after migrating slot ${slot}: ${without.length} key(s) without a TTL (${without.slice(0, 3).join(', ')})`);
          ctx.record({ kind: 'migrate-slot', target: `slot ${slot}: ${from} → ${to}, ${moved} keys, ${checked} lock keys with a TTL`, from: start, to: end, slot });
        } catch (error) {
          failed = true;
          ctx.fail(`migrating slot ${slot} from ${from} to ${to} failed: ${(error as Error).message}`);
        }
      });
    },
  },
];

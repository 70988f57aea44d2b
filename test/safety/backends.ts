/**
 * The lock implementations a worker can drive, behind one small interface. A backend reports what the checker needs
 * (token, claimed validity in reference time, when the granted request left the client) without the worker knowing
 * how the lock works. Adding a lock (ZooKeeper, say) means adding one function here and naming it in a scenario.
 *
 * @module
 */
import { randomUUID } from 'node:crypto';
import { Cluster, Redis } from 'ioredis';
import { Holdfast, Redlock, type HeldLock, type HeldRedlock, type HeldRedlockPermits, type Leadership, type RedisTransport } from '../../src/index.js';
import type { LeasedHeld } from '../../src/internal/hold.js';
import { driftOf } from '../../src/internal/lease.js';
import { toTransport } from '../../src/holdfast.js';
import { Keys } from '../../src/keys.js';
import { scripts } from '../../src/lua/scripts.gen.js';
import { perfOffset, refNow } from './clock.js';
import type { LockKind } from './protocol.js';

/** What a held lock tells the worker. */
export interface HeldHandle {
  token: number;
  leaseMs: number;
  /** When the granted request was sent (reference ms). */
  sendRef: number;
  /** The client's current deadline for the lease (reference ms): it changes as the lease is renewed. */
  validUntil(): number;
  /** Aborts when the backend considers the lock lost. */
  signal: AbortSignal;
  /** Extends a fixed lease; resolves with the new deadline and the extension's send time. */
  extend(leaseMs: number): Promise<{ validUntil: number; sendRef: number }>;
  release(): Promise<void>;
}

/** Hooks the worker gives a backend to log what happens under the hood (watchdog renewals). */
export interface BackendHooks {
  /** A renewal the backend made by itself succeeded (watchdog). */
  onRenewed(sendRef: number, validUntil: number, leaseMs: number): void;
}

/** One lock of a backend that serves many (the Cluster backend): which primitive, which name. */
export interface AcquireTarget {
  kind: LockKind;
  name: string;
}

export interface LockBackend {
  /**
   * `target`: the lock to take, for a backend of many locks (the others have one, their configuration's). `onRenewed`:
   * this hold's watchdog renewals, for a backend that reports them per hold rather than through its hooks.
   */
  acquire(options: { timeoutMs: number; signal: AbortSignal; target?: AcquireTarget; onRenewed?: BackendHooks['onRenewed'] }): Promise<HeldHandle>;
  close(): Promise<void>;
}

export interface BackendConfig {
  /** Redis URLs this worker reaches the lock servers by (through its fault proxies). */
  urls: string[];
  lock: string;
  prefix: string;
  adapter: 'ioredis' | 'node-redis';
  leaseMs: number;
  /** Keep the lease with holdfast's watchdog (true) or hold a fixed lease (false). */
  watchdog: boolean;
  watchdogIntervalMs: number;
  commandTimeoutMs: number;
}

/**
 * A connected client of the given kind, set up as test/support/clients.ts does — or, given a list of root nodes, a
 * Redis Cluster client, as test/support/cluster-clients.ts does. node-redis is imported only when asked for: loading it
 * costs a second of start-up per worker on a busy two-core machine.
 */
async function connectClient(kind: BackendConfig['adapter'], target: string | string[]): Promise<{ redis: unknown; disconnect: () => void }> {
  const nodes = typeof target === 'string' ? [] : target.map((u) => new URL(u)).map((u) => ({ host: u.hostname, port: Number(u.port) }));
  if (kind === 'ioredis') {
    const client =
      typeof target === 'string'
        ? new Redis(target, { maxRetriesPerRequest: 1, lazyConnect: true })
        : new Cluster(nodes, { redisOptions: { maxRetriesPerRequest: 2 }, lazyConnect: true });
    client.on('error', () => {});
    await client.connect();
    return { redis: client, disconnect: () => client.disconnect() };
  }
  const { createClient, createCluster } = await import('redis');
  const client =
    typeof target === 'string'
      ? createClient({ url: target, socket: { reconnectStrategy: (n: number) => Math.min(n * 50, 500) } })
      : createCluster({ rootNodes: nodes.map((n) => ({ url: `redis://${n.host}:${n.port}` })) });
  client.on('error', () => {});
  await client.connect();
  return {
    redis: client,
    disconnect: () => {
      try {
        client.destroy();
      } catch {
        /* already closed */
      }
    },
  };
}

/**
 * The handle of a holdfast hold (any primitive: its lease deadline, converted to reference time by `offset`).
 * `onRelease` runs as the release starts.
 */
function leasedHandle(held: LeasedHeld, token: number, offset: number, leaseMs: number, sendRef: number, onRelease: () => void): HeldHandle {
  return {
    token,
    leaseMs,
    sendRef,
    validUntil: () => held.hold.deadline + offset,
    signal: held.signal,
    async extend(ms) {
      const sendRef = refNow();
      await held.extend(ms);
      return { sendRef, validUntil: held.hold.deadline + offset };
    },
    async release() {
      onRelease();
      await held.release();
    },
  };
}

/**
 * Reports the watchdog renewals of one hold that succeeded, each with the send it was observed at and the deadline the
 * hold has once its reply is in. A reply that comes back late — after holdfast gave up on that renewal at its command
 * timeout and a later renewal, sent since, has succeeded — finds the deadline that later renewal set: it is left to the
 * later one to report. (A deadline beyond this send + lease that no later success explains is still reported, for the
 * checker to judge.)
 */
export class RenewalWatch {
  /** The send time of the latest-sent renewal whose success came back so far. */
  #renewed = -Infinity;

  constructor(
    readonly leaseMs: number,
    readonly deadline: () => number,
    readonly report: (sendRef: number, validUntil: number, leaseMs: number) => void,
  ) {}

  /** A renewal of this hold was just sent; `reply` is its reply (1: renewed). */
  sent(reply: Promise<unknown>): void {
    const at = refNow();
    reply.then(
      (r) => {
        if (r !== 1) return;
        this.#renewed = Math.max(this.#renewed, at);
        // The lease confirms the renewal in the same microtask chain; read the deadline once it has.
        setImmediate(() => {
          const validUntil = this.deadline();
          if (validUntil > at + this.leaseMs && this.#renewed > at) return;
          this.report(at, validUntil, this.leaseMs);
        });
      },
      () => {},
    );
  }
}

/**
 * holdfast's reentrant `Lock` (or, `fair`, its `FairLock` with a 2 s waiterTimeout), over ioredis or node-redis. For
 * the fair lock, `sendRef` is the send of the last acquire script before the lock was held: the waiter's last queued
 * attempt when the hand-off message made it the holder (its first lease counts from there), else the claiming one.
 */
export async function holdfastBackend(config: BackendConfig, hooks: BackendHooks, fair = false): Promise<LockBackend> {
  const url = config.urls[0];
  if (!url) throw new Error('holdfast backend needs one URL');
  const { redis, disconnect } = await connectClient(config.adapter, url);
  const offset = perfOffset();
  const lockKey = `${config.prefix}{${config.lock}}:${fair ? 'fair' : 'lock'}`;
  const acquireSha = scripts[fair ? 'fair-lock/acquire' : 'lock/acquire'].sha;
  const renewSha = scripts[fair ? 'owned/renew' : 'lock/renew'].sha;
  // Observe (never change) what holdfast sends: the send time of the last acquire / renew for our lock.
  const inner = toTransport(redis);
  let acquireSent = 0;
  let current: HeldLock | undefined;
  let watch: RenewalWatch | undefined;
  const observed: RedisTransport = {
    kind: inner.kind,
    ...(inner.epoch ? { epoch: () => inner.epoch?.() ?? 0 } : {}),
    eval: (s, k, a) => inner.eval(s, k, a),
    command: (a, k) => inner.command(a, k),
    createSubscriber: (f, s) => inner.createSubscriber(f, s),
    evalsha: (sha, keys, args) => {
      const sent = refNow();
      const reply = inner.evalsha(sha, keys, args);
      // (not the fair lock's background claim, its mode '2': that is sent once the lock is already held; the plain
      // lock's ARGV[4] is its wait mode, and every attempt counts)
      if (keys[0] === lockKey && sha === acquireSha && (!fair || args[3] !== '2')) acquireSent = sent;
      if (keys[0] === lockKey && sha === renewSha) watch?.sent(reply);
      return reply;
    },
  };
  const holdfast = new Holdfast({
    redis: observed,
    prefix: config.prefix,
    commandTimeout: config.commandTimeoutMs,
    ...(config.watchdog ? { watchdogLease: config.leaseMs, watchdogInterval: config.watchdogIntervalMs } : {}),
  });
  const lock = fair ? holdfast.fairLock(config.lock, { waiterTimeout: 2000 }) : holdfast.lock(config.lock);
  return {
    async acquire({ timeoutMs, signal }) {
      const held = await lock.acquire({ timeout: timeoutMs, signal, ...(config.watchdog ? {} : { lease: config.leaseMs }) });
      current = held;
      watch = config.watchdog
        ? new RenewalWatch(config.leaseMs, () => held.hold.deadline + offset, (sendRef, validUntil, leaseMs) => {
            if (held === current) hooks.onRenewed(sendRef, validUntil, leaseMs);
          })
        : undefined;
      return leasedHandle(held, held.token, offset, config.leaseMs, acquireSent, () => {
        current = undefined;
        watch = undefined;
      });
    },
    async close() {
      await holdfast.close().catch(() => {});
      disconnect();
    },
  };
}

/**
 * holdfast's leader `Election`: a grant is a leadership (campaign → resign), its token the term, its lease the one the
 * watchdog keeps (`leaseMs`, renewed every `watchdogIntervalMs`). What it sends is observed, never changed: the send
 * of the last campaign script for the election, and its renewals.
 */
export async function electionBackend(config: BackendConfig, hooks: BackendHooks): Promise<LockBackend> {
  const url = config.urls[0];
  if (!url) throw new Error('election backend needs one URL');
  const { redis, disconnect } = await connectClient(config.adapter, url);
  const offset = perfOffset();
  const leaderKey = new Keys(config.prefix).election(config.lock);
  const campaignSha = scripts['election/campaign'].sha;
  const renewSha = scripts['election/renew'].sha;
  const inner = toTransport(redis);
  let campaignSent = 0;
  let current: Leadership | undefined;
  let watch: RenewalWatch | undefined;
  const observed: RedisTransport = {
    kind: inner.kind,
    ...(inner.epoch ? { epoch: () => inner.epoch?.() ?? 0 } : {}),
    eval: (s, k, a) => inner.eval(s, k, a),
    command: (a, k) => inner.command(a, k),
    createSubscriber: (f, s) => inner.createSubscriber(f, s),
    evalsha: (sha, keys, args) => {
      const sent = refNow();
      const reply = inner.evalsha(sha, keys, args);
      if (keys[0] === leaderKey && sha === campaignSha) campaignSent = sent;
      if (keys[0] === leaderKey && sha === renewSha) watch?.sent(reply);
      return reply;
    },
  };
  const holdfast = new Holdfast({
    redis: observed,
    prefix: config.prefix,
    commandTimeout: config.commandTimeoutMs,
    watchdogLease: config.leaseMs,
    watchdogInterval: config.watchdogIntervalMs,
  });
  const election = holdfast.election(config.lock, { label: `worker-${process.pid}` });
  return {
    async acquire({ timeoutMs, signal }) {
      const held = await election.campaign({ timeout: timeoutMs, signal, lease: config.leaseMs });
      current = held;
      watch = new RenewalWatch(config.leaseMs, () => held.hold.deadline + offset, (sendRef, validUntil, leaseMs) => {
        if (held === current) hooks.onRenewed(sendRef, validUntil, leaseMs);
      });
      return leasedHandle(held, held.term, offset, config.leaseMs, campaignSent, () => {
        current = undefined;
        watch = undefined;
      });
    },
    async close() {
      await holdfast.close().catch(() => {});
      disconnect();
    },
  };
}

/**
 * holdfast's real {@link Redlock} over N independent redis-servers (one client per node, of the worker's adapter kind).
 * Fixed lease or watchdog; the watchdog's quorum renewals are reported through `hooks.onRenewed` by watching the
 * lease's deadline move after a renew reply (observing, never changing, what Redlock sends). With `permits`: one
 * permit per grant of the Redlock semaphore of that many permits (token 0: a semaphore has no fencing token).
 */
export async function redlockBackend(config: BackendConfig, hooks: BackendHooks, permits?: number): Promise<LockBackend> {
  const clients = await Promise.all(config.urls.map((url) => connectClient(config.adapter, url)));
  const offset = perfOffset();
  const drift = driftOf(config.leaseMs);
  const lockKey = `${config.prefix}{${config.lock}}:lock`;
  const slotKeys = `${config.prefix}{${config.lock}}:qsem:`;
  let current: HeldRedlock | HeldRedlockPermits | undefined;
  let reported = 0;
  const watch = (keys: readonly string[], reply: Promise<unknown>): void => {
    if (!config.watchdog || (keys[0] !== lockKey && !(permits !== undefined && keys[0]?.startsWith(slotKeys)))) return;
    const held = current;
    reply.then(
      () =>
        setImmediate(() => {
          // The lease confirms a quorum renewal in the reply's microtask chain: a moved deadline is a renewal.
          if (!held || held !== current || held.lost) return;
          const deadline = held.hold.deadline;
          if (deadline <= reported) return;
          reported = deadline;
          hooks.onRenewed(deadline + offset - config.leaseMs + drift, deadline + offset, config.leaseMs);
        }),
      () => {},
    );
  };
  const nodes: RedisTransport[] = clients.map(({ redis }) => {
    const inner = toTransport(redis);
    return {
      kind: inner.kind,
      command: (a, k) => inner.command(a, k),
      createSubscriber: (f, s) => inner.createSubscriber(f, s),
      eval: (s, k, a) => {
        const reply = inner.eval(s, k, a);
        watch(k, reply);
        return reply;
      },
      evalsha: (sha, k, a) => {
        const reply = inner.evalsha(sha, k, a);
        watch(k, reply);
        return reply;
      },
    };
  });
  const redlock = new Redlock({
    redis: nodes,
    prefix: config.prefix,
    nodeTimeout: Math.min(config.commandTimeoutMs, 100),
    retryCount: Infinity,
    retryDelay: 30,
    retryJitter: 60,
    ...(config.watchdog ? { watchdogLease: config.leaseMs, watchdogInterval: config.watchdogIntervalMs } : {}),
  });
  const lock = redlock.lock(config.lock);
  const semaphore = permits === undefined ? undefined : redlock.semaphore(config.lock, { permits });
  return {
    async acquire({ timeoutMs, signal }) {
      const options = { timeout: timeoutMs, signal, ...(config.watchdog ? {} : { lease: config.leaseMs }) };
      const held = semaphore ? await semaphore.acquire(1, options) : await lock.acquire(options);
      current = held;
      reported = held.hold.deadline;
      // The lease was started at the attempt's start, before the first acquire request left: deadline = start + lease − drift.
      const sendRef = held.hold.deadline + offset - config.leaseMs + drift;
      return leasedHandle(held, 'token' in held ? held.token : 0, offset, config.leaseMs, sendRef, () => {
        current = undefined;
      });
    },
    async close() {
      await redlock.close().catch(() => {});
      for (const c of clients) c.disconnect();
    },
  };
}

/**
 * holdfast over a Redis Cluster client (ioredis `Cluster` or node-redis `createCluster`, sharded pub/sub), on many
 * names and three exclusive primitives: `Lock`, `FairLock` (waiterTimeout 2 s) and the write lock of a `ReadWriteLock`,
 * all minting from the counter of their name's slot. One holdfast client per process, shared by its loops. What it
 * sends is observed, never changed: per lock key and owner, the send of the last acquire script (the fair lock's
 * background claim left out, as in {@link holdfastBackend}) and the renewals that succeeded.
 */
export async function clusterBackend(config: BackendConfig): Promise<LockBackend> {
  const { redis, disconnect } = await connectClient(config.adapter, config.urls);
  const offset = perfOffset();
  const keys = new Keys(config.prefix);
  const fairAcquire: string = scripts['fair-lock/acquire'].sha;
  const acquireShas = new Set<string>([scripts['lock/acquire'].sha, fairAcquire, scripts['rw/write-acquire'].sha]);
  const renewShas = new Set<string>([scripts['lock/renew'].sha, scripts['owned/renew'].sha]);
  const shaOf = new Map<string, string>(Object.values(scripts).map((d) => [d.source, d.sha]));
  /** `<lock key> <owner>` → reference time of the last acquire script sent for it. */
  const sent = new Map<string, number>();
  /** `<lock key> <owner>` of a live hold → its renewals. */
  const renewing = new Map<string, RenewalWatch>();
  const inner = toTransport(redis);
  const observe = (sha: string | undefined, k: readonly string[], a: readonly unknown[], reply: Promise<unknown>): void => {
    if (sha === undefined) return;
    const id = `${k[0]} ${String(a[0])}`;
    if (acquireShas.has(sha) && !(sha === fairAcquire && a[3] === '2')) {
      sent.delete(id);
      sent.set(id, refNow());
      // (entries of acquisitions that failed are never read: keep the newest few thousand)
      if (sent.size > 5000) for (const old of [...sent.keys()].slice(0, 1000)) sent.delete(old);
    } else if (renewShas.has(sha)) renewing.get(id)?.sent(reply);
  };
  const observed: RedisTransport = {
    kind: inner.kind,
    ...(inner.epoch ? { epoch: () => inner.epoch?.() ?? 0 } : {}),
    command: (a, k) => inner.command(a, k),
    createSubscriber: (f, sharded) => inner.createSubscriber(f, sharded),
    evalsha: (sha, k, a) => {
      const reply = inner.evalsha(sha, k, a);
      observe(sha, k, a, reply);
      return reply;
    },
    // (a node that never ran a script answers NOSCRIPT and holdfast sends it whole)
    eval: (source, k, a) => {
      const reply = inner.eval(source, k, a);
      observe(shaOf.get(source), k, a, reply);
      return reply;
    },
  };
  const holdfast = new Holdfast({
    redis: observed,
    prefix: config.prefix,
    commandTimeout: config.commandTimeoutMs,
    shardedPubSub: true,
    ...(config.watchdog ? { watchdogLease: config.leaseMs, watchdogInterval: config.watchdogIntervalMs } : {}),
  });
  return {
    async acquire({ timeoutMs, signal, target, onRenewed }) {
      if (!target) throw new Error('the cluster backend acquires a named target');
      const called = refNow();
      const options = { timeout: timeoutMs, signal, ...(config.watchdog ? {} : { lease: config.leaseMs }) };
      const { kind, name } = target;
      const [key, held] =
        kind === 'lock'
          ? [keys.lock(name), await holdfast.lock(name).acquire(options)]
          : kind === 'fair'
            ? [keys.fairLock(name), await holdfast.fairLock(name, { waiterTimeout: 2000 }).acquire(options)]
            : [keys.rwWriter(name), await holdfast.readWriteLock(name).writeLock().acquire(options)];
      const id = `${key} ${held.owner}`;
      // (never missing in practice; the call's start is the earliest it can be)
      const sendRef = sent.get(id) ?? called;
      sent.delete(id);
      if (onRenewed && config.watchdog) {
        const watch = new RenewalWatch(config.leaseMs, () => held.hold.deadline + offset, (sendRef, validUntil, leaseMs) => {
          if (renewing.get(id) === watch) onRenewed(sendRef, validUntil, leaseMs);
        });
        renewing.set(id, watch);
      }
      return leasedHandle(held, held.token, offset, config.leaseMs, sendRef, () => renewing.delete(id));
    },
    async close() {
      await holdfast.close().catch(() => {});
      disconnect();
    },
  };
}

/**
 * A deliberately simple majority lock over N independent redis-servers (the Redlock algorithm without its
 * refinements), used only for the harness self-test: a node that restarts empty at once lets a second client win a
 * majority while the first still holds — a double grant the checker must see. Fixed lease, no renewal. The token is
 * the largest of per-node `INCR` counters: best effort, lost with a node's data.
 */
export async function majorityBackend(config: BackendConfig): Promise<LockBackend> {
  const nodes = config.urls.map((url) => {
    const r = new Redis(url, { maxRetriesPerRequest: 0, enableOfflineQueue: false, connectTimeout: 200, retryStrategy: () => 50 });
    r.on('error', () => {});
    return r;
  });
  const key = `${config.prefix}{${config.lock}}:mlock`;
  const fence = `${config.prefix}{${config.lock}}:mfence`;
  const quorum = Math.floor(nodes.length / 2) + 1;
  const drift = Math.floor(config.leaseMs * 0.01) + 2;
  const perNodeTimeout = 100;
  const ACQ = `if redis.call('set', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then return redis.call('incr', KEYS[2]) end return 0`;
  const REL = `if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) end return 0`;
  const bounded = <T>(p: Promise<T>) =>
    Promise.race([p, new Promise<never>((_, reject) => setTimeout(() => reject(new Error('node timeout')), perNodeTimeout).unref())]);
  const releaseAll = (value: string) => Promise.allSettled(nodes.map((n) => bounded(n.eval(REL, 1, key, value))));
  await Promise.all(nodes.map((n) => n.ping().catch(() => {})));
  return {
    async acquire({ timeoutMs, signal }) {
      const deadline = refNow() + timeoutMs;
      for (;;) {
        signal.throwIfAborted();
        const value = randomUUID();
        const t1 = refNow();
        const replies = await Promise.allSettled(nodes.map((n) => bounded(n.eval(ACQ, 2, key, fence, value, config.leaseMs) as Promise<number>)));
        const tokens = replies.flatMap((r) => (r.status === 'fulfilled' && r.value > 0 ? [r.value] : []));
        const validity = config.leaseMs - (refNow() - t1) - drift;
        if (tokens.length >= quorum && validity > 0) {
          const validUntil = t1 + config.leaseMs - drift;
          const controller = new AbortController();
          setTimeout(() => controller.abort(new Error('lease ran out')), validUntil - refNow()).unref();
          return {
            token: Math.max(...tokens),
            leaseMs: config.leaseMs,
            sendRef: t1,
            validUntil: () => validUntil,
            signal: controller.signal,
            extend() {
              return Promise.reject(new Error('the self-test majority lock does not extend'));
            },
            async release() {
              await releaseAll(value);
            },
          };
        }
        await releaseAll(value);
        if (refNow() > deadline) throw Object.assign(new Error('majority not reached'), { code: 'ACQUIRE_TIMEOUT' });
        await new Promise((r) => setTimeout(r, 20 + Math.random() * 60));
      }
    },
    async close() {
      for (const n of nodes) n.disconnect();
    },
  };
}

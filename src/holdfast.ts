/**
 * The holdfast client: one per process (or per Redis), wrapping the user's own Redis client.
 *
 * @module
 */
import { EventEmitter } from 'node:events';
import { glideTransport, isGlide } from './adapters/glide.js';
import { isIoredis, ioredisTransport } from './adapters/ioredis.js';
import { isNodeRedis, nodeRedisTransport } from './adapters/node-redis.js';
import { isTransport, type RedisTransport } from './client.js';
import { RedisStore, type Store } from './store.js';
import { isPostgresPool, PostgresStore } from './postgres/store.js';
import { checkSchemaName, DEFAULT_SCHEMA } from './postgres/schema.js';
import { Core, firstProcessWarning, type CoreSettings, type HoldfastWarning } from './core.js';
import { scripts } from './lua/scripts.gen.js';
import type { LockLostError } from './errors.js';
import { checkDuration, checkKnownKeys, checkName, checkOptions, checkPrefix, optBoolean } from './internal/validate.js';
import { checkReplicaSync, type ReplicaSync } from './internal/replica-sync.js';
import { checkLabel, LabelAnnouncer } from './internal/label.js';
import type { ReleaseEvent } from './internal/events.js';
import { FairLock, type FairLockOptions } from './primitives/fair-lock.js';
import { Lock, type AcquireOptions, type LockScope } from './primitives/lock.js';
import { CacheLoader, type CacheLoaderOptions, type GetOrLoadOptions, type Loader } from './recipes/cache-loader.js';
import { inspectJob, Scheduler, type JobInfo, type SchedulerOptions } from './recipes/scheduler.js';
import { SegmentedStock, type SegmentedStockOptions } from './recipes/segmented-stock.js';
import { CountDownLatch } from './primitives/count-down-latch.js';
import { MultiLock, toLocks } from './primitives/multi-lock.js';
import { PermitExpirableSemaphore } from './primitives/permit-expirable-semaphore.js';
import { ReadWriteLock, type ReadWriteLockOptions } from './primitives/read-write-lock.js';
import { Semaphore } from './primitives/semaphore.js';
import { FencedKey } from './fencing/fenced-key.js';
import { Election, type ElectionOptions } from './primitives/election.js';

/** Options of {@link Holdfast}. */
export interface HoldfastOptions {
  /**
   * Your Redis client: an ioredis `Redis`/`Cluster`, a connected node-redis client, a Valkey GLIDE `GlideClient`/
   * `GlideClusterClient`, or any {@link RedisTransport}. holdfast never closes it; it opens one extra connection (a
   * duplicate; for GLIDE a client created from the same configuration) for pub/sub when something waits.
   * Give this or `postgres`, not both.
   * @default none: give `redis` or `postgres`
   */
  redis?: unknown;
  /**
   * Your PostgreSQL pool instead of Redis: a node-postgres (`pg` ≥ 8) `Pool`. holdfast never closes it; each
   * operation is one statement on it (any pool works, PgBouncer in transaction mode included), and it opens one
   * connection of its own, with the pool's settings, to `LISTEN` for wake-ups while something waits. Its schema is
   * created on first use when the role may (see `schema`). Give this or `redis`, not both.
   * @default none: give `redis` or `postgres`
   */
  postgres?: unknown;
  /**
   * PostgreSQL only: the schema holdfast keeps its tables and functions in (a plain identifier). Created on first use
   * when missing, or ahead of time with `npx holdfast migrate --postgres <url> --schema <name>`.
   * @default "holdfast"
   */
  schema?: string;
  /**
   * PostgreSQL only: wake waiters with `LISTEN`/`NOTIFY`. `false` makes them poll instead (say so when no connection
   * to the server can stay in a session, e.g. every connection goes through a transaction-mode pooler: holdfast also
   * finds that out by itself, and then polls and emits one `POLLING` warning).
   * @default true
   */
  listen?: boolean;
  /**
   * Prepended to every key and channel holdfast uses. Give each application its own.
   * @default "holdfast:"
   */
  prefix?: string;
  /**
   * The lease the watchdog keeps on a lock acquired without an explicit `lease`, in ms.
   * @default 30000
   */
  watchdogLease?: number;
  /**
   * How often the watchdog renews, in ms. Must be less than `watchdogLease`.
   * @default watchdogLease / 3 (10000)
   */
  watchdogInterval?: number;
  /**
   * Longest wait for one Redis reply, in ms; past it the call fails with `RedisConnectionError`
   * (a dead Redis never hangs a caller).
   * @default 5000
   */
  commandTimeout?: number;
  /**
   * How long a release request's retry-safety marker lives in Redis, in ms.
   * @default 60000
   */
  releaseMarkerTtl?: number;
  /**
   * Use sharded pub/sub (`SSUBSCRIBE`/`SPUBLISH`, Redis ≥ 7) — for Redis Cluster.
   * @default false
   */
  shardedPubSub?: boolean;
  /**
   * After every acquisition, wait until this many replicas acknowledged it (`WAIT`, or `WAITAOF` with `aof: true`);
   * when they do not within `timeout`, the acquisition is released and `ReplicationNotReachedError` thrown.
   * Narrows (does not close) the window in which a failover loses a lock. Each acquire can override it.
   * @default undefined: no replica sync
   */
  replicaSync?: ReplicaSync;
  /**
   * What to do when the server's `maxmemory-policy` can evict holdfast's keys (read once, at the first acquisition).
   * Every `volatile-*` policy can evict a held lock (its key has a TTL), so another client gets it while the holder
   * still works; every `allkeys-*` policy can also evict a fencing counter, so tokens start again. `'warn'`: emit a
   * `warning` event (or, when nobody listens, a process warning: once per server in a process) and go on; `'refuse'`: every acquisition rejects with
   * `EvictionPolicyError`; `'ignore'`: do not check. Use `noeviction`, or a Redis that holds no evictable data.
   * @default "warn"
   */
  evictionPolicy?: 'warn' | 'refuse' | 'ignore';
  /**
   * A label for this client's holders, e.g. `` `${hostname()}:${process.pid}` ``: `holdfast inspect`, `holdfast jobs`,
   * the dashboard and the diagnostics payloads show it next to a holder's fingerprint, so that an operator can tell
   * which host and process holds what. It is not a secret and never the owner id. 1 to 200 printable characters.
   * The client keeps it in one small key (`<prefix>label:{<fingerprint>}`, a 60 s TTL refreshed every 20 s in the
   * background, deleted by `close()`); no acquisition waits for it.
   * @default undefined: holders are shown by fingerprint only
   */
  label?: string;
}

const OPTION_KEYS = [
  'redis',
  'postgres',
  'schema',
  'listen',
  'prefix',
  'watchdogLease',
  'watchdogInterval',
  'commandTimeout',
  'releaseMarkerTtl',
  'shardedPubSub',
  'replicaSync',
  'evictionPolicy',
  'label',
] as const;
const EVICTION_POLICIES = ['warn', 'refuse', 'ignore'] as const;

/** What {@link Holdfast.store} tells of a client on Redis (or the in-process backend). */
export interface RedisStoreInfo {
  /** The store: Redis. */
  kind: 'redis';
}

/** What {@link Holdfast.store} tells of a client on PostgreSQL. */
export interface PostgresStoreInfo {
  /** The store: PostgreSQL. */
  kind: 'postgres';
  /** The schema holdfast keeps its tables and functions in. */
  schema: string;
  /** How waiters are woken: `notify` (`LISTEN`/`NOTIFY`), or `polling` where no listening connection can hear. */
  wakeups: 'notify' | 'polling';
}

/** What {@link Holdfast.store} tells. */
export type StoreInfo = RedisStoreInfo | PostgresStoreInfo;

/** Events a {@link Holdfast} client emits. */
export interface HoldfastEvents {
  /** A held lock was lost (its `signal` aborted with the same error). */
  lockLost: [error: LockLostError];
  /** Something about the Redis server can break the guarantees (see {@link HoldfastWarning}). */
  warning: [warning: HoldfastWarning];
}

/** The store of a client's options: Redis (`redis`) or PostgreSQL (`postgres`, `schema`, `listen`). */
function toStore(opts: HoldfastOptions, warn: (warning: HoldfastWarning) => void): Store {
  if (opts.postgres === undefined) {
    if (opts.schema !== undefined || opts.listen !== undefined) throw new TypeError('options.schema and options.listen are for a `postgres` pool');
    if (opts.redis === undefined) throw new TypeError('options must have a `redis` client or a `postgres` pool');
    return new RedisStore(toTransport(opts.redis));
  }
  if (opts.redis !== undefined) throw new TypeError('options.redis and options.postgres: give one store, not both');
  if (!isPostgresPool(opts.postgres)) throw new TypeError('options.postgres must be a node-postgres Pool (pg ≥ 8)');
  return new PostgresStore(opts.postgres, {
    schema: checkSchemaName(opts.schema ?? DEFAULT_SCHEMA),
    listen: optBoolean(opts.listen, 'options.listen') ?? true,
    warn,
  });
}

/** Turns a user's client into a transport, or throws a `TypeError` that says what is accepted. */
export function toTransport(redis: unknown): RedisTransport {
  if (isTransport(redis)) return redis;
  if (isIoredis(redis)) return ioredisTransport(redis);
  if (isNodeRedis(redis)) return nodeRedisTransport(redis);
  if (isGlide(redis)) return glideTransport(redis);
  throw new TypeError('options.redis must be an ioredis client, a node-redis client, a Valkey GLIDE client or a RedisTransport');
}

/**
 * The entry point. Create one per process and share it; `close()` it on shutdown.
 *
 * @example
 * ```ts
 * const holdfast = new Holdfast({ redis: new Redis() });
 * await using lock = await holdfast.lock('invoice:42').acquire({ timeout: 5000 });
 * await chargeCustomer({ fence: lock.token, signal: lock.signal });
 * ```
 */
export class Holdfast extends EventEmitter<HoldfastEvents> {
  /** @internal */
  readonly core: Core;
  readonly #label: LabelAnnouncer | undefined;

  constructor(options: HoldfastOptions) {
    super();
    const opts = checkOptions<HoldfastOptions>(options);
    if (options === undefined) throw new TypeError('options must be an object with a `redis` client or a `postgres` pool');
    checkKnownKeys(opts, OPTION_KEYS);
    const store = toStore(opts, (warning) => this.core.emitWarning(warning, ''));
    const prefix = checkPrefix(opts.prefix ?? 'holdfast:');
    const watchdogLease = checkDuration(opts.watchdogLease ?? 30_000, 'options.watchdogLease', 100);
    const watchdogInterval = checkDuration(opts.watchdogInterval ?? Math.floor(watchdogLease / 3), 'options.watchdogInterval', 10);
    if (watchdogInterval >= watchdogLease) {
      throw new RangeError(`options.watchdogInterval (${watchdogInterval}) must be less than options.watchdogLease (${watchdogLease})`);
    }
    const settings: CoreSettings = {
      prefix,
      watchdogLease,
      watchdogInterval,
      commandTimeout: checkDuration(opts.commandTimeout ?? 5000, 'options.commandTimeout'),
      releaseMarkerTtl: checkDuration(opts.releaseMarkerTtl ?? 60_000, 'options.releaseMarkerTtl', 1000),
      sharded: optBoolean(opts.shardedPubSub, 'options.shardedPubSub') ?? false,
      replicaSync: checkReplicaSync(opts.replicaSync, 'options.replicaSync'),
      evictionPolicy: opts.evictionPolicy ?? 'warn',
    };
    const label = checkLabel(opts.label);
    if (!EVICTION_POLICIES.includes(settings.evictionPolicy)) {
      throw new TypeError(`options.evictionPolicy must be one of ${EVICTION_POLICIES.join(', ')}, got ${String(opts.evictionPolicy)}`);
    }
    if (store.kind === 'postgres') {
      if (opts.replicaSync !== undefined) throw new TypeError('options.replicaSync is for Redis replicas: on PostgreSQL use synchronous_commit and a synchronous standby');
      if (opts.shardedPubSub !== undefined) throw new TypeError('options.shardedPubSub is for Redis Cluster, not PostgreSQL');
      if (opts.evictionPolicy !== undefined) throw new TypeError('options.evictionPolicy is about Redis eviction: PostgreSQL never evicts a row');
      settings.evictionPolicy = 'ignore';
    }
    this.core = new Core(
      store,
      settings,
      (error) => {
        if (this.listenerCount('lockLost') > 0) this.emit('lockLost', error);
      },
      (warning, server) => {
        if (this.listenerCount('warning') > 0) this.emit('warning', warning);
        else if (firstProcessWarning(warning.code, server)) process.emitWarning(warning.message, { code: `HOLDFAST_${warning.code}` });
      },
    );
    this.#label = label === undefined ? undefined : new LabelAnnouncer(this.core, label);
  }

  /**
   * Which store this client runs on, and, on PostgreSQL, its schema and how its waiters are woken: `notify`
   * (`LISTEN`/`NOTIFY`) or `polling` (no listening connection can hear: a transaction-mode pooler, or `listen: false`;
   * the `warning` event says so once, with code `POLLING`). Wake-ups are known to work once a waiter's first
   * subscription has been checked: until then a store that listens says `notify`.
   */
  get store(): StoreInfo {
    const store = this.core.store;
    if (store instanceof PostgresStore) return { kind: 'postgres', schema: store.schema, wakeups: store.wakeups };
    return { kind: 'redis' };
  }

  /** This client's `label` option, or `undefined`. */
  get label(): string | undefined {
    return this.#label?.label;
  }

  /** The settings in force (defaults filled in). */
  get settings(): Readonly<CoreSettings> {
    return this.core.settings;
  }

  /**
   * Carries per-name fencing counters (one key per lock name, `<prefix>{<name>}:fence`, an earlier key layout) over to
   * the shared counters (one per Redis Cluster slot), so that tokens keep growing for names locked under that layout:
   * each per-name counter raises its slot's counter to at least its value, then is deleted. Walks the prefix with
   * `SCAN` (`count` keys per step). Run it once, on each Cluster master, before (or soon after) the shared counters
   * mint tokens for those names; running it again finds nothing to do.
   * @returns how many old counters were carried over
   */
  async migrateFencingCounters(options: { count?: number } = {}): Promise<number> {
    redisOnly(this.core, 'holdfast.migrateFencingCounters()', 'it carries Redis keys of an earlier layout over; a PostgreSQL schema has one fencing sequence');
    const opts = checkOptions<{ count?: number }>(options);
    checkKnownKeys(opts, ['count']);
    const count = opts.count === undefined ? 1000 : checkDuration(opts.count, 'options.count');
    const core = this.core;
    core.assertOpen();
    const keys = core.keys;
    const pattern = `${keys.prefix.replace(/[*?[\]\\]/g, '\\$&')}{*}:fence`;
    let cursor = '0';
    let moved = 0;
    do {
      const [next, found] = (await core.command(['SCAN', cursor, 'MATCH', pattern, 'COUNT', String(count)])) as [string, string[]];
      cursor = String(next);
      for (const key of found) {
        const name = keys.nameOf(key);
        if (name === undefined || keys.fence(name) === key) continue; // already a shared counter
        await core.run(scripts['fence/migrate'], [key, keys.fence(name)], []);
        moved++;
      }
    } while (cursor !== '0');
    return moved;
  }

  /**
   * A scheduled job's record (of the scheduler or its node-cron, `cron` and NestJS adapters): its last tick run, by
   * which instance fingerprint, how long it took, its error, and whether a run holds it now.
   * @returns `undefined` when the job has no record (never claimed, or forgotten 7 days after its last tick)
   */
  inspectJob(name: string): Promise<JobInfo | undefined> {
    this.core.assertOpen();
    return inspectJob(this.core, checkName(name));
  }

  /** A handle on the reentrant lock `name` (cheap; no Redis call). */
  lock(name: string): Lock {
    return new Lock(this.core, checkName(name));
  }

  /**
   * A handle on the fair (FIFO) lock `name` (cheap; no Redis call): waiters across all processes get it in arrival
   * order, each release hands it straight to the next live waiter. A different lock from `lock(name)`.
   */
  fairLock(name: string, options?: FairLockOptions): FairLock {
    return new FairLock(this.core, checkName(name), options);
  }

  /**
   * Calls `listener` each time the lock `name` (`holdfast.lock(name)`) is released or force-unlocked, by any process,
   * until the returned function is called; resolves once subscribed. An expiry publishes nothing and is not reported
   * (see `Lock.waitUntilFree`).
   */
  onRelease(name: string, listener: (event: ReleaseEvent) => void): Promise<() => void> {
    return this.lock(name).onRelease(listener);
  }

  /** Shorthand for `holdfast.lock(name).withLock(fn, options)`. */
  withLock<T>(name: string, fn: (scope: LockScope) => Promise<T> | T, options?: AcquireOptions): Promise<T> {
    return this.lock(name).withLock(fn, options);
  }

  /**
   * A scheduler whose cron jobs run once per tick across every instance (ShedLock semantics). `close()` stops it,
   * aborting runs in progress through their signal.
   */
  scheduler(options?: SchedulerOptions): Scheduler {
    redisOnly(this.core, 'holdfast.scheduler()');
    this.core.assertOpen();
    return new Scheduler(this.core, options);
  }

  /** A cache whose misses are loaded by one caller across the cluster while the others wait (cache-stampede guard). */
  cacheLoader<T = unknown>(options?: CacheLoaderOptions<T>): CacheLoader<T> {
    return new CacheLoader<T>(this.core, options);
  }

  #cache: CacheLoader | undefined;

  /** Shorthand for `holdfast.cacheLoader().getOrLoad(key, loader, options)` (JSON codec; `options.ttl` required). */
  getOrLoad<V>(key: string, loader: Loader<V>, options?: GetOrLoadOptions): Promise<V> {
    this.#cache ??= new CacheLoader(this.core);
    return this.#cache.getOrLoad(key, loader, options);
  }

  /** A stock (non-negative counter) split into segments, taken from atomically without oversell (cheap; no Redis call). */
  segmentedStock(name: string, options?: SegmentedStockOptions): SegmentedStock {
    redisOnly(this.core, 'holdfast.segmentedStock()');
    return new SegmentedStock(this.core, name, options);
  }

  /** A handle on the read-write lock `name`: `.readLock()` / `.writeLock()` (cheap; no Redis call). */
  readWriteLock(name: string, options?: ReadWriteLockOptions): ReadWriteLock {
    return new ReadWriteLock(this.core, checkName(name), options);
  }

  /** A handle on the counting semaphore `name` (cheap; no Redis call). */
  semaphore(name: string): Semaphore {
    return new Semaphore(this.core, checkName(name));
  }

  /** A handle on the semaphore `name` whose permits are leases with ids (cheap; no Redis call). */
  permitExpirableSemaphore(name: string): PermitExpirableSemaphore {
    return new PermitExpirableSemaphore(this.core, checkName(name));
  }

  /** A handle on the count-down latch `name` (cheap; no Redis call). */
  countDownLatch(name: string): CountDownLatch {
    return new CountDownLatch(this.core, checkName(name));
  }

  /**
   * Several locks taken all-or-nothing in a deadlock-free order: lock names (locks of this client) or `Lock`
   * objects (of any client).
   */
  multiLock(locks: readonly (string | Lock)[]): MultiLock {
    return new MultiLock(toLocks(locks, (name) => new Lock(this.core, name)));
  }

  /** A Redis value guarded by fencing tokens: writes with a token older than the last accepted one are rejected. */
  fencedKey(name: string): FencedKey {
    redisOnly(this.core, 'holdfast.fencedKey()', 'it guards a Redis value; on PostgreSQL keep the data in the database and check the token in its transaction');
    return new FencedKey(this.core, checkName(name));
  }

  /**
   * A handle on the leader election `name` (cheap; no Redis call): `campaign()` to lead, `run()` to lead in a loop,
   * `leader()` and `observe()` to follow who leads. `close()` resigns every leadership of this client.
   */
  election(name: string, options?: ElectionOptions): Election {
    redisOnly(this.core, 'holdfast.election()');
    return new Election(this.core, checkName(name), options);
  }

  /** True once `close()` was called. */
  get closed(): boolean {
    return this.core.closed;
  }

  /**
   * Releases every lock this client holds, stops every timer, fails pending waits with `ClientClosedError` and
   * closes the pub/sub connection. Your Redis client stays open. Idempotent.
   */
  close(): Promise<void> {
    this.#label?.stop();
    return this.core.close();
  }

  /** `await using holdfast = new Holdfast(...)` closes it at the end of the scope. */
  [Symbol.asyncDispose](): Promise<void> {
    return this.close();
  }
}

/**
 * Throws at once, naming `what`, on a client whose store is not Redis: a primitive that runs on Redis only for now
 * would otherwise fail later, at its first operation.
 */
function redisOnly(core: Core, what: string, why?: string): void {
  if (core.store.kind === 'redis') return;
  throw new TypeError(`${what} is Redis-only for now: it is not available on a holdfast client on PostgreSQL${why === undefined ? '' : ` (${why})`}`);
}

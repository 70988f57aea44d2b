/**
 * The one fixture of the primitive suites: `describeEachAdapter(title, body)` runs `body` once per client adapter,
 * each time against its own redis-server (or several) started for it, and closes every holdfast client the suite
 * opened. A suite file holds behaviour, not server scaffolding.
 */
import { after, before, describe, type TestContext } from 'node:test';
import type { Holdfast, HoldfastOptions } from '../../src/index.js';
import { adapters, makeHoldfast, openMemoryStore, type AdapterCase, type OpenedMemoryStore } from './clients.js';
import { RedisServer, type RedisServerOptions } from './redis-server.js';
import { createTestSchema, dropSchema, POSTGRES_URL } from './postgres.js';
import { PgBouncer } from './pgbouncer.js';

/**
 * `HOLDFAST_POSTGRES_VIA=pgbouncer`: the postgres adapter reaches PostgreSQL through a PgBouncer in transaction mode
 * (one per suite), where LISTEN cannot work and waiters poll (test/postgres/pgbouncer-suites.test.ts runs the lock and
 * semaphore suites so).
 */
const VIA_PGBOUNCER = process.env.HOLDFAST_POSTGRES_VIA?.trim() === 'pgbouncer';

/** Waits `ms` milliseconds (real time). */
export const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/** An opened holdfast client and its own Redis connection. */
export interface Opened {
  holdfast: Holdfast;
  /** The client's connection (of the suite's adapter). */
  redis: unknown;
  /** Closes the holdfast client and its connection (also done by the fixture at the end of the suite). */
  dispose: () => Promise<void>;
}

/** What a suite body gets: its adapter, its server, and clients on demand. */
export interface SuiteContext {
  readonly adapter: AdapterCase;
  /**
   * The URL of each of the suite's servers, in the order of `servers`: a `redis://` URL, or on the in-process adapter
   * the `memory://` name of an in-process store (which only the suite's adapter reaches).
   */
  readonly urls: readonly string[];
  /**
   * False, and the test reported as skipped with `why`, on the in-process adapter: for a test that needs what one
   * process cannot have (a redis-server process to pause, kill or restart; a second process or client library on the
   * same data; replicas; a network). `if (!ctx.requireServer(t, 'pauses the server')) return;`
   */
  requireServer(t: TestContext, why: string): boolean;
  /**
   * False, and the test reported as skipped with `why`, on the postgres adapter: for a test that needs Redis itself
   * (a raw Redis probe or command, a Redis-only option). `if (!ctx.requireRedis(t, 'reads the key with GET')) return;`
   */
  requireRedis(t: TestContext, why: string): boolean;
  /** The suite's redis-server (started before the first test); the first of `servers`. */
  readonly server: RedisServer;
  /** Every redis-server of the suite: one, or `options.servers` of them (e.g. the independent nodes of a Redlock). */
  readonly servers: readonly RedisServer[];
  /** A holdfast client opened before the first test, with a unique prefix. */
  readonly holdfast: Holdfast;
  /** Opens one more holdfast client (own connection, unique prefix unless given), closed at the end of the suite. */
  open(options?: Omit<HoldfastOptions, 'redis'>, url?: string): Promise<Opened>;
}

/** Options of {@link describeEachAdapter}. */
export interface SuiteOptions {
  /** Options of the suite's redis-server (of each, with `servers`), e.g. `{ args: ['--appendonly', 'yes'] }`. */
  server?: RedisServerOptions;
  /** How many independent redis-servers to start (default 1). The default client and `open()` use the first. */
  servers?: number;
  /** Options of the suite's default `holdfast` client. */
  holdfast?: Omit<HoldfastOptions, 'redis'>;
  /**
   * Why the whole suite needs a redis-server (its hooks drive one: a fault proxy, a replica, a direct client). On the
   * in-process adapter the suite is reported as skipped with this reason instead of run.
   */
  requiresServer?: string;
  /**
   * Why the whole suite does not apply on PostgreSQL (a Redis-only primitive, or what it tests is Redis' own): on the
   * postgres adapter it is reported as skipped with this reason instead of run.
   */
  notOnPostgres?: string;
  /** The `describe`'s `concurrency` (node:test), e.g. `true` to run the suite's tests at the same time. */
  concurrency?: boolean | number;
}

/**
 * On the in-process adapter, a suite "server" is its store served over RESP: `url` and `port` reach the same store (a
 * test's direct probe with ioredis or raw RESP works), and anything else a redis-server process can do (pause, kill,
 * restart) throws, naming what one process cannot have.
 */
function servedStore(store: OpenedMemoryStore, adapter: string): RedisServer {
  const { url, port } = store.served;
  return new Proxy({ url, port }, {
    get(target, key) {
      if (key === 'url' || key === 'port') return (target as Record<string, unknown>)[key];
      if (key === 'then' || typeof key === 'symbol') return undefined;
      throw new Error(`the ${adapter} adapter has no redis-server process (server.${key}): a test that needs one starts with ctx.requireServer(t, why)`);
    },
  }) as RedisServer;
}

/** The postgres adapter's suite "server": no redis-server behind it; any use throws, naming the way out. */
function noRedisServer(adapter: string): RedisServer {
  return new Proxy({}, {
    get(_target, key) {
      if (key === 'then' || typeof key === 'symbol') return undefined;
      throw new Error(`the ${adapter} adapter has no redis-server (server.${String(key)}): a test that needs one starts with ctx.requireServer(t, why) or ctx.requireRedis(t, why)`);
    },
  }) as RedisServer;
}

/**
 * Runs `body` once per client adapter (ioredis, node-redis, GLIDE, and the in-process memory backend), as
 * `describe(\`${title} (${adapter})\`)`. `HOLDFAST_ADAPTERS` selects some (see clients.ts).
 */
export function describeEachAdapter(title: string, body: (ctx: SuiteContext) => void, options: SuiteOptions = {}): void {
  for (const adapter of adapters) {
    if (adapter.inProcess && options.requiresServer !== undefined) {
      void describe(`${title} (${adapter.name})`, { skip: `not in one process: ${options.requiresServer}` }, () => {});
      continue;
    }
    const notOnPostgres = options.notOnPostgres ?? (options.requiresServer === undefined ? undefined : `needs a redis-server: ${options.requiresServer}`);
    if (adapter.postgres && notOnPostgres !== undefined) {
      void describe(`${title} (${adapter.name})`, { skip: `not on PostgreSQL: ${notOnPostgres}` }, () => {});
      continue;
    }
    void describe(`${title} (${adapter.name})`, options.concurrency === undefined ? {} : { concurrency: options.concurrency }, () => {
      let servers: RedisServer[] = [];
      let urls: string[] = [];
      let stores: OpenedMemoryStore[] = [];
      let schemas: string[] = [];
      let bouncer: PgBouncer | undefined;
      let main: Opened | undefined;
      const opened: Opened[] = [];
      const ctx: SuiteContext = {
        adapter,
        get server(): RedisServer {
          return ctx.servers[0]!;
        },
        get servers(): readonly RedisServer[] {
          if (adapter.inProcess) return stores.map((s) => servedStore(s, adapter.name));
          if (adapter.postgres) return schemas.map(() => noRedisServer(adapter.name));
          if (servers.length === 0) throw new Error('the suite server is not started yet: use it inside a test or a before hook');
          return servers;
        },
        get urls(): readonly string[] {
          if (urls.length === 0) throw new Error('the suite server is not started yet: use it inside a test or a before hook');
          return urls;
        },
        requireServer(t, why) {
          if (adapter.postgres) {
            t.skip(`not on PostgreSQL: needs a redis-server: ${why}`);
            return false;
          }
          if (!adapter.inProcess) return true;
          t.skip(`not in one process: ${why}`);
          return false;
        },
        requireRedis(t, why) {
          if (!adapter.postgres) return true;
          t.skip(`not on PostgreSQL: ${why}`);
          return false;
        },
        get holdfast(): Holdfast {
          if (!main) throw new Error('the suite client is not open yet: use it inside a test or a before hook');
          return main.holdfast;
        },
        async open(holdfastOptions = {}, url) {
          const made = await makeHoldfast(adapter, url ?? ctx.urls[0]!, holdfastOptions);
          opened.push(made);
          return made;
        },
      };
      // registered before the body's hooks, so the servers and the default client are there in them
      before(async () => {
        const count = options.servers ?? 1;
        if (adapter.inProcess) {
          stores = await Promise.all(Array.from({ length: count }, () => openMemoryStore()));
          urls = stores.map((s) => s.url);
        } else if (adapter.postgres) {
          schemas = Array.from({ length: count }, () => createTestSchema(title));
          if (VIA_PGBOUNCER) bouncer = await PgBouncer.start({ poolMode: 'transaction', maxClientConn: 500, defaultPoolSize: 10 });
          urls = schemas.map((schema) => {
            const u = new URL(bouncer?.url ?? POSTGRES_URL);
            u.searchParams.set('holdfast_schema', schema);
            return u.toString();
          });
        } else {
          servers = await Promise.all(Array.from({ length: count }, () => RedisServer.start(options.server)));
          urls = servers.map((s) => s.url);
        }
        main = await ctx.open(options.holdfast);
      });
      body(ctx);
      // registered after the body's hooks, so it runs after them (node:test runs `after` hooks in order): the body
      // tears its own things down while the servers still run
      after(async () => {
        await Promise.allSettled(opened.map((o) => o.dispose()));
        await Promise.all(servers.map((s) => s.stop()));
        await Promise.all(stores.map((s) => s.close()));
        await bouncer?.stop();
        await Promise.all(schemas.map((schema) => dropSchema(schema)));
      });
    });
  }
}

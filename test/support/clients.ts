/**
 * The Redis clients the suites run against: each suite runs once per adapter.
 */
import { GlideClient, Logger, ProtocolVersion } from '@valkey/valkey-glide';
import { Redis } from 'ioredis';
import { createClient } from 'redis';
import { Holdfast, type HoldfastOptions } from '../../src/index.js';
import { memoryRedis, memoryStore, serveMemoryStore, type MemoryRedis, type MemoryStore } from '../../src/memory/index.js';
import type pg from 'pg';
import { openPool } from './postgres.js';

// GLIDE's core logs every error reply (a NOSCRIPT, a refused acquisition…) as a warning on stdout
Logger.setLoggerConfig('error');

/**
 * The RESP version every adapter's connections speak: `HOLDFAST_RESP` (`2` or `3`), else 3 (each client's own default
 * since ioredis 6, node-redis 6 and GLIDE 2, pinned here so that a run says which it tested). The lock suite runs once
 * more with `HOLDFAST_RESP=2` (test/primitives/lock-resp.test.ts).
 */
export const RESP: 2 | 3 = ((): 2 | 3 => {
  const value = process.env.HOLDFAST_RESP?.trim() || '3';
  if (value !== '2' && value !== '3') throw new Error(`HOLDFAST_RESP must be 2 or 3, got ${value}`);
  return value === '2' ? 2 : 3;
})();

/** `redis://host:port` → GLIDE's address. */
export function glideAddress(url: string): { host: string; port: number } {
  const u = new URL(url);
  return { host: u.hostname, port: Number(u.port || 6379) };
}

export interface AdapterCase {
  name: 'ioredis' | 'node-redis' | 'glide' | 'memory' | 'postgres';
  /**
   * The PostgreSQL store (a node-postgres pool on the machine's PostgreSQL, one schema per suite): no Redis. A test
   * that needs Redis itself (a redis-server to pause, a raw Redis probe, a Redis-only primitive) says so by name
   * (`ctx.requireRedis(t, why)`, or the suite's `notOnPostgres`), and is reported as skipped with that reason.
   */
  readonly postgres?: boolean;
  /**
   * The in-process backend (holdfast/memory): no redis-server, no second process, no network. A test that needs one
   * of those says so by name (`ctx.requireServer(t, why)` in the suites), and is reported as skipped with that reason.
   */
  readonly inProcess?: boolean;
  /** A connected client of this kind. */
  connect(url: string): Promise<unknown>;
  /** Closes a client made by `connect`. */
  disconnect(client: unknown): Promise<void>;
}

const all: AdapterCase[] = [
  {
    name: 'ioredis',
    async connect(url) {
      const client = new Redis(url, { maxRetriesPerRequest: 1, lazyConnect: true, protocol: RESP });
      client.on('error', () => {});
      await client.connect();
      return client;
    },
    async disconnect(client) {
      (client as Redis).disconnect();
    },
  },
  {
    name: 'node-redis',
    async connect(url) {
      const client = createClient({ url, RESP, socket: { reconnectStrategy: (n: number) => Math.min(n * 50, 500) } });
      client.on('error', () => {});
      await client.connect();
      return client;
    },
    async disconnect(client) {
      const c = client as ReturnType<typeof createClient>;
      try {
        c.destroy();
      } catch {
        /* already closed */
      }
    },
  },
  {
    name: 'glide',
    async connect(url) {
      // GLIDE's requestTimeout (250 ms by default) must outlast holdfast's commandTimeout and any WAIT
      return GlideClient.createClient({
        addresses: [glideAddress(url)],
        requestTimeout: 10_000,
        protocol: RESP === 2 ? ProtocolVersion.RESP2 : ProtocolVersion.RESP3,
      });
    },
    async disconnect(client) {
      (client as GlideClient).close();
    },
  },
  {
    name: 'memory',
    inProcess: true,
    async connect(url) {
      // alive while open, like the sockets of the other adapters (the fixture closes it)
      return memoryRedis({ store: memoryStoreAt(url), keepAlive: true });
    },
    async disconnect(client) {
      await (client as MemoryRedis).close();
    },
  },
  {
    name: 'postgres',
    postgres: true,
    async connect(url) {
      return openPool(postgresUrlOf(url).url, 10);
    },
    async disconnect(client) {
      await (client as pg.Pool).end().catch(() => {});
    },
  },
];

/** A suite "server" of the postgres adapter: the server's URL with the suite's schema (`…?holdfast_schema=<name>`). */
export function postgresUrlOf(url: string): { url: string; schema: string } {
  const u = new URL(url);
  const schema = u.searchParams.get('holdfast_schema');
  if (!schema) throw new Error(`not a postgres adapter URL (no holdfast_schema): ${url}`);
  u.searchParams.delete('holdfast_schema');
  return { url: u.toString(), schema };
}

/** The memory adapter's stores, by URL (see {@link openMemoryStore}). */
const memoryStores = new Map<string, MemoryStore>();

/** An in-process store opened for a suite: its `memory://` name, and the `redis://` URL and port it is served on. */
export interface OpenedMemoryStore {
  readonly url: string;
  /** The store served over RESP on a loopback port (serveMemoryStore), for a test's direct probe (ioredis, raw RESP). */
  readonly served: { readonly url: string; readonly port: number };
  close(): Promise<void>;
}

/**
 * A new in-process store, reachable by the memory adapter's `connect(url)` under both of its URLs until closed, and
 * served over RESP so that a test can probe it directly as it probes a redis-server.
 */
export async function openMemoryStore(): Promise<OpenedMemoryStore> {
  const url = `memory://${Math.random().toString(36).slice(2, 10)}`;
  const store = memoryStore();
  const server = await serveMemoryStore(store);
  memoryStores.set(url, store);
  memoryStores.set(server.url, store);
  return {
    url,
    served: { url: server.url, port: server.port },
    close: async () => {
      memoryStores.delete(url);
      memoryStores.delete(server.url);
      await server.close();
      store.close();
    },
  };
}

function memoryStoreAt(url: string): MemoryStore {
  const store = memoryStores.get(url);
  if (!store) throw new Error(`no in-process store at ${url} (the memory adapter reaches only stores opened by openMemoryStore())`);
  return store;
}

/**
 * The adapters the suites run with: every one, or those named in `HOLDFAST_ADAPTERS` (comma-separated, e.g.
 * `HOLDFAST_ADAPTERS=glide node scripts/run-tests.mjs test/primitives/lock.test.ts` while working on one).
 */
export const adapters: AdapterCase[] = ((): AdapterCase[] => {
  const wanted = process.env.HOLDFAST_ADAPTERS?.split(',').map((s) => s.trim()).filter(Boolean);
  if (!wanted || wanted.length === 0) return all;
  const unknown = wanted.filter((w) => !all.some((a) => a.name === w));
  if (unknown.length > 0) throw new Error(`HOLDFAST_ADAPTERS: unknown adapter ${unknown.join(', ')} (known: ${all.map((a) => a.name).join(', ')})`);
  return all.filter((a) => wanted.includes(a.name));
})();

/**
 * The adapter of the tests that are not per adapter and need a redis-server (across processes, a server of their
 * own): the first selected one that reaches a server, else ioredis (when only the in-process adapter is selected).
 */
export const serverAdapter: AdapterCase = adapters.find((a) => !a.inProcess && !a.postgres) ?? all[0]!;

/** Every adapter, whatever `HOLDFAST_ADAPTERS` says (for fixtures that look one up by name). */
export const allAdapters: readonly AdapterCase[] = all;

/** A holdfast client over a fresh connection of `adapter`, with a unique prefix; `dispose()` closes both. */
export async function makeHoldfast(
  adapter: AdapterCase,
  url: string,
  options: Omit<HoldfastOptions, 'redis'> = {},
): Promise<{ holdfast: Holdfast; redis: unknown; dispose: () => Promise<void> }> {
  const redis = await adapter.connect(url);
  const prefix = `t${Math.random().toString(36).slice(2, 8)}:`;
  const holdfast = adapter.postgres
    ? new Holdfast({ postgres: redis, schema: postgresUrlOf(url).schema, prefix, ...options })
    : new Holdfast({ redis, prefix, ...options });
  return {
    holdfast,
    redis,
    dispose: async () => {
      await holdfast.close().catch(() => {});
      await adapter.disconnect(redis);
    },
  };
}

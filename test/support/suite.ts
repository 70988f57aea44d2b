/**
 * The one fixture of the primitive suites: `describeEachAdapter(title, body)` runs `body` once per client adapter,
 * each time against its own redis-server (or several) started for it, and closes every holdfast client the suite
 * opened. A suite file holds behaviour, not server scaffolding.
 */
import { after, before, describe } from 'node:test';
import type { Holdfast, HoldfastOptions } from '../../src/index.js';
import { adapters, makeHoldfast, type AdapterCase } from './clients.js';
import { RedisServer, type RedisServerOptions } from './redis-server.js';

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
  /** The `describe`'s `concurrency` (node:test), e.g. `true` to run the suite's tests at the same time. */
  concurrency?: boolean | number;
}

/** Runs `body` once per client adapter (ioredis, node-redis), as `describe(\`${title} (${adapter})\`)`. */
export function describeEachAdapter(title: string, body: (ctx: SuiteContext) => void, options: SuiteOptions = {}): void {
  for (const adapter of adapters) {
    void describe(`${title} (${adapter.name})`, options.concurrency === undefined ? {} : { concurrency: options.concurrency }, () => {
      let servers: RedisServer[] = [];
      let main: Opened | undefined;
      const opened: Opened[] = [];
      const ctx: SuiteContext = {
        adapter,
        get server(): RedisServer {
          return ctx.servers[0]!;
        },
        get servers(): readonly RedisServer[] {
          if (servers.length === 0) throw new Error('the suite server is not started yet: use it inside a test or a before hook');
          return servers;
        },
        get holdfast(): Holdfast {
          if (!main) throw new Error('the suite client is not open yet: use it inside a test or a before hook');
          return main.holdfast;
        },
        async open(holdfastOptions = {}, url) {
          const made = await makeHoldfast(adapter, url ?? ctx.server.url, holdfastOptions);
          opened.push(made);
          return made;
        },
      };
      // registered before the body's hooks, so the servers and the default client are there in them
      before(async () => {
        servers = await Promise.all(Array.from({ length: options.servers ?? 1 }, () => RedisServer.start(options.server)));
        main = await ctx.open(options.holdfast);
      });
      body(ctx);
      // registered after the body's hooks, so it runs after them (node:test runs `after` hooks in order): the body
      // tears its own things down while the servers still run
      after(async () => {
        await Promise.allSettled(opened.map((o) => o.dispose()));
        await Promise.all(servers.map((s) => s.stop()));
      });
    });
  }
}

/**
 * The one fixture of the primitive suites: `describeEachAdapter(title, body)` runs `body` once per client adapter,
 * each time against its own redis-server started for it, and closes every holdfast client the suite opened. A suite
 * file holds behaviour, not server scaffolding.
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
  /** The suite's redis-server (started before the first test). */
  readonly server: RedisServer;
  /** A holdfast client opened before the first test, with a unique prefix. */
  readonly holdfast: Holdfast;
  /** Opens one more holdfast client (own connection, unique prefix unless given), closed at the end of the suite. */
  open(options?: Omit<HoldfastOptions, 'redis'>, url?: string): Promise<Opened>;
}

/** Options of {@link describeEachAdapter}. */
export interface SuiteOptions {
  /** Options of the suite's redis-server. */
  server?: RedisServerOptions;
  /** Options of the suite's default `holdfast` client. */
  holdfast?: Omit<HoldfastOptions, 'redis'>;
}

/** Runs `body` once per client adapter (ioredis, node-redis), as `describe(\`${title} (${adapter})\`)`. */
export function describeEachAdapter(title: string, body: (ctx: SuiteContext) => void, options: SuiteOptions = {}): void {
  for (const adapter of adapters) {
    void describe(`${title} (${adapter.name})`, () => {
      let server: RedisServer | undefined;
      let main: Opened | undefined;
      const opened: Opened[] = [];
      const ctx: SuiteContext = {
        adapter,
        get server(): RedisServer {
          if (!server) throw new Error('the suite server is not started yet: use it inside a test or a before hook');
          return server;
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
      before(async () => {
        server = await RedisServer.start(options.server);
        main = await ctx.open(options.holdfast);
      });
      after(async () => {
        await Promise.allSettled(opened.map((o) => o.dispose()));
        await server?.stop();
      });
      body(ctx);
    });
  }
}

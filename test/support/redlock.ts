/**
 * The shared setup of the Redlock suites: inside a `describeEachAdapter` body, one connection of the suite's adapter
 * per suite server (opened before the first test, closed after the last), and Redlocks over them, each with a fresh
 * prefix and closed after the last test.
 */
import { after, before } from 'node:test';
import { Redlock, type RedlockOptions } from '../../src/index.js';
import type { SuiteContext } from './suite.js';

export interface RedlockNodes {
  /** One connection per suite server, in the order of `ctx.servers` (filled before the first test). */
  readonly clients: unknown[];
  /**
   * A Redlock over `clients` with a fresh prefix (`<stem><random>:`), 20 ms retry delay and jitter, and `options`
   * (which may name other nodes or a prefix of its own).
   */
  make: (options?: Partial<RedlockOptions>) => Redlock;
}

export function redlockNodes(ctx: SuiteContext, stem: string): RedlockNodes {
  const clients: unknown[] = [];
  const redlocks: Redlock[] = [];
  before(async () => {
    for (const url of ctx.urls) clients.push(await ctx.adapter.connect(url));
  });
  after(async () => {
    await Promise.all(redlocks.map((r) => r.close()));
    await Promise.all(clients.map((c) => ctx.adapter.disconnect(c)));
  });
  return {
    clients,
    make: (options = {}) => {
      const redlock = new Redlock({ redis: clients, prefix: `${stem}${Math.random().toString(36).slice(2, 8)}:`, retryDelay: 20, retryJitter: 20, ...options });
      redlocks.push(redlock);
      return redlock;
    },
  };
}

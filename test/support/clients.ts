/**
 * The Redis clients the suites run against: each suite runs once per adapter.
 */
import { Redis } from 'ioredis';
import { createClient } from 'redis';
import { Holdfast, type HoldfastOptions } from '../../src/index.js';

export interface AdapterCase {
  name: 'ioredis' | 'node-redis';
  /** A connected client of this kind. */
  connect(url: string): Promise<unknown>;
  /** Closes a client made by `connect`. */
  disconnect(client: unknown): Promise<void>;
}

export const adapters: AdapterCase[] = [
  {
    name: 'ioredis',
    async connect(url) {
      const client = new Redis(url, { maxRetriesPerRequest: 1, lazyConnect: true });
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
      const client = createClient({ url, socket: { reconnectStrategy: (n: number) => Math.min(n * 50, 500) } });
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
];

/** A holdfast client over a fresh connection of `adapter`, with a unique prefix; `dispose()` closes both. */
export async function makeHoldfast(
  adapter: AdapterCase,
  url: string,
  options: Omit<HoldfastOptions, 'redis'> = {},
): Promise<{ holdfast: Holdfast; redis: unknown; dispose: () => Promise<void> }> {
  const redis = await adapter.connect(url);
  const holdfast = new Holdfast({ redis, prefix: `t${Math.random().toString(36).slice(2, 8)}:`, ...options });
  return {
    holdfast,
    redis,
    dispose: async () => {
      await holdfast.close().catch(() => {});
      await adapter.disconnect(redis);
    },
  };
}

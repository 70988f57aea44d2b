/**
 * The cluster clients the Cluster suites run with: an ioredis `Cluster`, a node-redis `createCluster` and a Valkey
 * GLIDE `GlideClusterClient`, each connected to a {@link RedisCluster} started by the test support.
 */
import { GlideClusterClient } from '@valkey/valkey-glide';
import { Cluster } from 'ioredis';
import { createCluster } from 'redis';
import { Holdfast, type HoldfastOptions } from '../../src/index.js';
import './clients.js'; // GLIDE's log level
import type { RedisCluster } from './cluster.js';

export interface ClusterClientCase {
  name: string;
  /** A connected cluster client of this kind, and how to close it. */
  connect(cluster: RedisCluster): Promise<{ client: unknown; close(): Promise<void> }>;
}

export const clusterClients: ClusterClientCase[] = [
  {
    name: 'ioredis Cluster',
    async connect(cluster) {
      const client = new Cluster(cluster.nodes, { redisOptions: { maxRetriesPerRequest: 2 }, lazyConnect: true });
      client.on('error', () => {});
      await client.connect();
      return { client, close: async () => void client.disconnect() };
    },
  },
  {
    name: 'node-redis createCluster',
    async connect(cluster) {
      const client = createCluster({ rootNodes: cluster.nodes.map((n) => ({ url: `redis://${n.host}:${n.port}` })) });
      client.on('error', () => {});
      await client.connect();
      return { client, close: async () => client.destroy() };
    },
  },
  {
    name: 'GLIDE GlideClusterClient',
    async connect(cluster) {
      const client = await GlideClusterClient.createClient({ addresses: cluster.nodes, requestTimeout: 10_000 });
      return { client, close: async () => client.close() };
    },
  },
];

/** Opens holdfast clients over fresh cluster connections of one kind; `closeAll()` closes them and their connections. */
export function clusterHoldfasts(
  kind: ClusterClientCase,
  cluster: () => RedisCluster,
): { open(options?: Omit<HoldfastOptions, 'redis'>): Promise<Holdfast>; closeAll(): Promise<void> } {
  const opened: (() => Promise<void>)[] = [];
  return {
    async open(options = {}) {
      const conn = await kind.connect(cluster());
      const holdfast = new Holdfast({ redis: conn.client, ...options });
      opened.push(async () => {
        await holdfast.close().catch(() => {});
        await conn.close().catch(() => {});
      });
      return holdfast;
    },
    async closeAll() {
      await Promise.all(opened.splice(0).map((close) => close()));
    },
  };
}

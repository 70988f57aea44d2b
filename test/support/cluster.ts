/**
 * A 3-master Redis Cluster for tests (no replicas): `redis-server --cluster-enabled yes` on free loopback ports, joined
 * with `redis-cli --cluster create`, plus a slot migration done by hand (SETSLOT IMPORTING/MIGRATING, MIGRATE key by key,
 * SETSLOT NODE), slow enough that clients see `ASK`/`TRYAGAIN` while it runs.
 */
import { cli, infoField, until } from './redis-cli.js';
import { RedisServer } from './redis-server.js';

export class RedisCluster {
  private constructor(readonly servers: RedisServer[]) {}

  /** `masters` masters with `replicasPerMaster` replicas each (redis-cli assigns them). */
  static async start(masters = 3, replicasPerMaster = 0): Promise<RedisCluster> {
    const servers = await Promise.all(
      Array.from({ length: masters * (1 + replicasPerMaster) }, () =>
        RedisServer.start({
          args: ['--cluster-enabled', 'yes', '--cluster-config-file', 'nodes.conf', '--cluster-node-timeout', '3000', '--repl-diskless-sync-delay', '0'],
        }),
      ),
    );
    await cli(
      servers[0]!.port,
      '--cluster',
      'create',
      ...servers.map((s) => `127.0.0.1:${s.port}`),
      '--cluster-replicas',
      String(replicasPerMaster),
      '--cluster-yes',
    );
    const cluster = new RedisCluster(servers);
    await until(
      async () => {
        for (const s of servers) if (infoField(await cli(s.port, 'CLUSTER', 'INFO'), 'cluster_state') !== 'ok') return false;
        // every node must agree on the slot map before clients connect
        const maps = await Promise.all(servers.map((s) => cli(s.port, 'CLUSTER', 'SLOTS')));
        if (!maps.every((m) => m === maps[0])) return false;
        for (const s of servers) {
          const info = await cli(s.port, 'INFO', 'replication');
          if (infoField(info, 'role') === 'slave' && infoField(info, 'master_link_status') !== 'up') return false;
        }
        return true;
      },
      20_000,
      'cluster_state:ok on every node',
    );
    return cluster;
  }

  /** Root nodes for a client. */
  get nodes(): { host: string; port: number }[] {
    return this.servers.map((s) => ({ host: '127.0.0.1', port: s.port }));
  }

  /** The servers that are masters now. */
  async masters(): Promise<RedisServer[]> {
    const lines = (await cli(this.servers[0]!.port, 'CLUSTER', 'NODES')).split('\n');
    const ports = lines.filter((l) => l.split(' ')[2]?.includes('master')).map((l) => Number(l.split(' ')[1]?.split(':')[1]?.split('@')[0]));
    return this.servers.filter((s) => ports.includes(s.port));
  }

  /**
   * The replica server of the master on `masterPort`, as the master itself knows it (another node's view can lag
   * behind by a gossip round, e.g. right after a slot migration); waits up to 10 s for one to be known.
   */
  async replicaOf(masterPort: number): Promise<RedisServer> {
    const masterId = await this.nodeId(masterPort);
    const deadline = Date.now() + 10_000;
    for (;;) {
      const lines = (await cli(masterPort, 'CLUSTER', 'NODES')).split('\n');
      const line = lines.find((l) => l.split(' ')[3] === masterId);
      const port = Number(line?.split(' ')[1]?.split(':')[1]?.split('@')[0]);
      const server = this.servers.find((s) => s.port === port);
      if (server) return server;
      if (Date.now() > deadline) throw new Error(`no replica of ${masterPort}`);
      await new Promise((r) => setTimeout(r, 100));
    }
  }

  async nodeId(port: number): Promise<string> {
    return cli(port, 'CLUSTER', 'MYID');
  }

  async keySlot(key: string): Promise<number> {
    return Number(await cli(this.servers[0]!.port, 'CLUSTER', 'KEYSLOT', key));
  }

  /** The port of the master serving `slot`. */
  async ownerOf(slot: number): Promise<number> {
    const lines = (await cli(this.servers[0]!.port, 'CLUSTER', 'NODES')).split('\n');
    for (const line of lines) {
      const parts = line.split(' ');
      const port = Number(parts[1]?.split(':')[1]?.split('@')[0]);
      for (const range of parts.slice(8)) {
        if (range.startsWith('[')) continue;
        const [lo, hi] = range.split('-').map(Number);
        if (lo !== undefined && slot >= lo && slot <= (hi ?? lo)) return port;
      }
    }
    throw new Error(`no owner for slot ${slot}`);
  }

  /**
   * Moves `slot` to the master on `toPort`, `batch` keys per MIGRATE (redis-cli's reshard default is 10) with `pauseMs`
   * between batches (clients meanwhile get `ASK` for missing keys and `TRYAGAIN` for scripts whose keys are split),
   * then hands the slot over on every node.
   */
  async migrateSlot(slot: number, toPort: number, pauseMs = 50, batch = 10): Promise<number> {
    const fromPort = await this.ownerOf(slot);
    if (fromPort === toPort) return 0;
    const [fromId, toId] = await Promise.all([this.nodeId(fromPort), this.nodeId(toPort)]);
    await cli(toPort, 'CLUSTER', 'SETSLOT', String(slot), 'IMPORTING', fromId);
    await cli(fromPort, 'CLUSTER', 'SETSLOT', String(slot), 'MIGRATING', toId);
    let moved = 0;
    for (;;) {
      const keys = (await cli(fromPort, 'CLUSTER', 'GETKEYSINSLOT', String(slot), String(batch))).split('\n').filter(Boolean);
      if (keys.length === 0) break;
      await cli(fromPort, 'MIGRATE', '127.0.0.1', String(toPort), '', '0', '5000', 'KEYS', ...keys);
      moved += keys.length;
      await new Promise((r) => setTimeout(r, pauseMs));
    }
    await cli(toPort, 'CLUSTER', 'SETSLOT', String(slot), 'NODE', toId);
    await cli(fromPort, 'CLUSTER', 'SETSLOT', String(slot), 'NODE', toId);
    for (const s of this.servers) if (s.port !== toPort && s.port !== fromPort) await cli(s.port, 'CLUSTER', 'SETSLOT', String(slot), 'NODE', toId);
    return moved;
  }

  /** True while `slot` is being migrated away from its owner (its `CLUSTER SETSLOT … MIGRATING` is in force). */
  async isMigrating(slot: number): Promise<boolean> {
    const nodes = await cli(await this.ownerOf(slot), 'CLUSTER', 'NODES');
    return nodes.split('\n').some((line) => line.includes('myself') && line.includes(`[${slot}->-`));
  }

  /** Total `MOVED`, `ASK` and `TRYAGAIN` error replies the nodes sent so far (`INFO errorstats`). */
  async redirections(): Promise<number> {
    let total = 0;
    for (const s of this.servers) {
      const info = await cli(s.port, 'INFO', 'errorstats');
      for (const kind of ['MOVED', 'ASK', 'TRYAGAIN']) total += Number(/count=(\d+)/.exec(infoField(info, `errorstat_${kind}`) ?? '')?.[1] ?? 0);
    }
    return total;
  }

  async stop(): Promise<void> {
    await Promise.all(this.servers.map((s) => s.stop()));
  }
}

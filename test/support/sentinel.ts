/**
 * A Sentinel-managed master for tests: one master, one replica and three sentinels, all real processes on free
 * loopback ports. Sentinels run as `redis-sentinel` when installed, else as `redis-server --sentinel` (the same binary);
 * see binaries.ts for choosing the binaries.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { hasBinary, REDIS_CLI, REDIS_SENTINEL, REDIS_SERVER } from './binaries.js';
import { cli, infoField, until } from './redis-cli.js';
import { freePort, RedisServer } from './redis-server.js';

export const MASTER_NAME = 'holdfast-master';

/** One sentinel process. */
export class Sentinel {
  #child: ChildProcess | undefined;
  readonly dir = mkdtempSync(join(tmpdir(), 'holdfast-sentinel-'));

  constructor(
    readonly port: number,
    readonly masterPort: number,
    readonly quorum: number,
  ) {}

  async launch(): Promise<void> {
    const conf = join(this.dir, 'sentinel.conf');
    writeFileSync(
      conf,
      [
        `port ${this.port}`,
        'bind 127.0.0.1',
        `dir ${this.dir}`,
        `sentinel monitor ${MASTER_NAME} 127.0.0.1 ${this.masterPort} ${this.quorum}`,
        `sentinel down-after-milliseconds ${MASTER_NAME} 1000`,
        `sentinel failover-timeout ${MASTER_NAME} 4000`,
        `sentinel parallel-syncs ${MASTER_NAME} 1`,
        '',
      ].join('\n'),
    );
    const [bin, args]: [string, string[]] = hasBinary(REDIS_SENTINEL) ? [REDIS_SENTINEL, [conf]] : [REDIS_SERVER, [conf, '--sentinel']];
    this.#child = spawn(bin, args, { stdio: 'ignore' });
    await until(async () => (await cli(this.port, 'PING')) === 'PONG', 10_000, `sentinel on ${this.port}`);
  }

  async stop(): Promise<void> {
    const child = this.#child;
    if (child && child.exitCode === null && child.signalCode === null) {
      const exited = new Promise((r) => child.once('exit', r));
      child.kill('SIGKILL');
      await exited;
    }
    rmSync(this.dir, { recursive: true, force: true });
  }
}

/** Master + replica + 3 sentinels. */
export class SentinelSet {
  private constructor(
    readonly servers: RedisServer[],
    readonly sentinels: Sentinel[],
  ) {}

  static async start(): Promise<SentinelSet> {
    const master = await RedisServer.start({ args: ['--repl-diskless-sync-delay', '0'] });
    const replica = await RedisServer.start({ args: ['--repl-diskless-sync-delay', '0', '--replicaof', '127.0.0.1', String(master.port)] });
    await until(async () => infoField(await cli(replica.port, 'INFO', 'replication'), 'master_link_status') === 'up', 10_000, 'replica link');
    const sentinels = await Promise.all([0, 1, 2].map(async () => new Sentinel(await freePort(), master.port, 2)));
    await Promise.all(sentinels.map((s) => s.launch()));
    const set = new SentinelSet([master, replica], sentinels);
    // Every sentinel must know the replica and the other sentinels before a failover can be agreed.
    await until(
      async () => {
        for (const s of sentinels) {
          const info = await cli(s.port, 'SENTINEL', 'MASTER', MASTER_NAME);
          const fields = info.split('\n');
          const get = (k: string): string | undefined => fields[fields.indexOf(k) + 1];
          if (get('num-slaves') !== '1' || get('num-other-sentinels') !== '2') return false;
        }
        return true;
      },
      20_000,
      'sentinels to discover each other and the replica',
    );
    return set;
  }

  /** The sentinel addresses, for a client. */
  get sentinelNodes(): { host: string; port: number }[] {
    return this.sentinels.map((s) => ({ host: '127.0.0.1', port: s.port }));
  }

  /** The port the sentinels currently name as master. */
  async masterPort(): Promise<number> {
    const reply = await cli(this.sentinels[0]!.port, 'SENTINEL', 'GET-MASTER-ADDR-BY-NAME', MASTER_NAME);
    return Number(reply.split('\n')[1]);
  }

  /** The server process that is currently master, per the sentinels. */
  async master(): Promise<RedisServer> {
    const port = await this.masterPort();
    const server = this.servers.find((s) => s.port === port);
    if (!server) throw new Error(`no server on master port ${port}`);
    return server;
  }

  /** The server process that is currently the replica. */
  async replica(): Promise<RedisServer> {
    const port = await this.masterPort();
    const server = this.servers.find((s) => s.port !== port);
    if (!server) throw new Error('no replica');
    return server;
  }

  /** Waits until the sentinels name a master other than `oldPort` and it accepts writes. */
  async awaitFailover(oldPort: number, timeoutMs = 20_000): Promise<number> {
    let port = oldPort;
    await until(
      async () => {
        port = await this.masterPort();
        return port !== oldPort && infoField(await cli(port, 'INFO', 'replication'), 'role') === 'master';
      },
      timeoutMs,
      'failover',
    );
    return port;
  }

  /** Waits until the current master has an online replica that acknowledges a write (`SET` then `WAIT 1`). */
  async awaitReplicaInSync(timeoutMs = 30_000): Promise<void> {
    await until(
      async () => {
        const port = await this.masterPort();
        const probe = spawnSync(REDIS_CLI, ['-p', String(port)], { input: 'SET holdfast-test:probe 1\nWAIT 1 500\n', timeout: 5000 });
        return probe.stdout.toString().trim().split('\n').pop() === '1';
      },
      timeoutMs,
      'a replica in sync with the master',
    );
  }

  async stop(): Promise<void> {
    await Promise.all(this.sentinels.map((s) => s.stop()));
    await Promise.all(this.servers.map((s) => s.stop()));
  }
}

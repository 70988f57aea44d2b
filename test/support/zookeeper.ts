/**
 * Real ZooKeeper servers for tests, from Debian's `zookeeper` package: a standalone server or a 3-node ensemble on
 * free loopback ports, each node in its own temp dir (zoo.cfg and myid written here). The Java main class is run
 * directly (the Debian scripts want /etc and /var). Nodes can be stopped, killed (-9), restarted on the same ports
 * and paused (SIGSTOP); `leader()` asks each node `srvr`. Never touches a server it did not start.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdirSync, mkdtempSync, openSync, closeSync, rmSync, writeFileSync, existsSync } from 'node:fs';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { freePort } from './redis-server.js';

const ZK_JAR = '/usr/share/java/zookeeper.jar';
const LOG_JAR = '/usr/share/java/slf4j-simple.jar';

/** True when the Debian zookeeper package is installed. */
export const zookeeperInstalled = existsSync(ZK_JAR);

/**
 * `describe` for a suite that needs ZooKeeper (and `reason`, when given, is why it must not run now). When it cannot
 * run, one skipped test stands in for the suite: node's runner counts a skipped test in its `# skipped` summary, but
 * not a skipped `describe`.
 */
export function zkDescribe(name: string, fn: () => void, reason: string | false = false): void {
  const skip = reason || (!zookeeperInstalled && `zookeeper is not installed (${ZK_JAR}; apt-get install zookeeper)`);
  if (skip) void it(name, { skip }, () => {});
  else void describe(name, fn);
}

/** Sends a four-letter command (`srvr`, `ruok`, `mntr`) and returns the whole reply ('' if none). */
export function fourLetter(port: number, command: string, timeoutMs = 1000): Promise<string> {
  return new Promise((resolve) => {
    const socket = connect(port, '127.0.0.1');
    let data = '';
    const done = (): void => {
      clearTimeout(timer);
      socket.destroy();
      resolve(data);
    };
    const timer = setTimeout(done, timeoutMs);
    socket.on('connect', () => socket.write(command));
    socket.on('data', (chunk) => (data += chunk.toString()));
    socket.on('end', done);
    socket.on('error', done);
  });
}

/** One ZooKeeper server process (standalone, or member `id` of an ensemble). */
export class ZkNode {
  #child: ChildProcess | undefined;
  paused = false;

  constructor(
    readonly id: number,
    readonly dir: string,
    readonly clientPort: number,
  ) {}

  get pid(): number | undefined {
    return this.#child?.pid;
  }
  get running(): boolean {
    return this.#child !== undefined && this.#child.exitCode === null && this.#child.signalCode === null;
  }
  get address(): string {
    return `127.0.0.1:${this.clientPort}`;
  }

  /** Starts the JVM (does not wait for it to serve). */
  launch(): void {
    const log = openSync(join(this.dir, 'zk.log'), 'a');
    const child = spawn(
      'java',
      [
        '-Xmx160m',
        '-XX:+UseSerialGC',
        '-XX:TieredStopAtLevel=1',
        '-Dorg.slf4j.simpleLogger.defaultLogLevel=warn',
        '-Dzookeeper.jmx.log4j.disable=true',
        '-cp',
        `${ZK_JAR}:${LOG_JAR}`,
        'org.apache.zookeeper.server.quorum.QuorumPeerMain',
        join(this.dir, 'zoo.cfg'),
      ],
      { stdio: ['ignore', log, log] },
    );
    closeSync(log);
    this.#child = child;
    this.paused = false;
  }

  /** The `Mode:` line of `srvr`: 'leader', 'follower', 'standalone', or null when not serving. */
  async mode(): Promise<string | null> {
    if (!this.running || this.paused) return null;
    const reply = await fourLetter(this.clientPort, 'srvr', 500);
    return /Mode: (\w+)/.exec(reply)?.[1] ?? null;
  }

  /** SIGSTOP: the JVM freezes, connections stay open. */
  pause(): void {
    this.#child?.kill('SIGSTOP');
    this.paused = true;
  }
  /** SIGCONT. */
  resume(): void {
    this.#child?.kill('SIGCONT');
    this.paused = false;
  }

  /** kill -9 and wait for the exit (data on disk survives for a restart). */
  async kill(): Promise<void> {
    const child = this.#child;
    if (!child || !this.running) return;
    if (this.paused) this.resume();
    const exited = new Promise((r) => child.once('exit', r));
    child.kill('SIGKILL');
    await exited;
  }

  /** SIGTERM (clean stop) and wait. */
  async stop(): Promise<void> {
    const child = this.#child;
    if (!child || !this.running) return;
    if (this.paused) this.resume();
    const exited = new Promise((r) => child.once('exit', r));
    child.kill('SIGTERM');
    const timer = setTimeout(() => child.kill('SIGKILL'), 5000);
    await exited;
    clearTimeout(timer);
  }
}

export interface ZkClusterOptions {
  /** Number of servers: 1 = standalone. @default 1 */
  size?: number;
  /** ZooKeeper tickTime in ms; sessions may last 2..20 ticks. @default 200 */
  tickTime?: number;
  /** fsync the transaction log before acknowledging (production behaviour; slower). @default false */
  forceSync?: boolean;
}

/** A standalone ZooKeeper or an ensemble, started on free loopback ports. */
export class ZkCluster {
  private constructor(
    readonly nodes: ZkNode[],
    readonly root: string,
    readonly tickTime: number,
  ) {}

  /** Starts the servers and waits until every one serves (and, for an ensemble, a leader is elected). */
  static async start(options: ZkClusterOptions = {}): Promise<ZkCluster> {
    if (!zookeeperInstalled) throw new Error(`ZooKeeper is not installed (${ZK_JAR} missing): apt-get install -y zookeeper`);
    const size = options.size ?? 1;
    const tickTime = options.tickTime ?? 200;
    const root = mkdtempSync(join(tmpdir(), 'holdfast-zk-'));
    const ports: { client: number; quorum: number; election: number }[] = [];
    for (let i = 0; i < size; i++) ports.push({ client: await freePort(), quorum: await freePort(), election: await freePort() });
    const nodes = ports.map((p, i) => {
      const id = i + 1;
      const dir = join(root, `n${id}`);
      mkdirSync(join(dir, 'data'), { recursive: true });
      const lines = [
        `tickTime=${tickTime}`,
        'initLimit=20',
        'syncLimit=10',
        `dataDir=${join(dir, 'data')}`,
        `clientPort=${p.client}`,
        'clientPortAddress=127.0.0.1',
        'admin.enableServer=false',
        '4lw.commands.whitelist=srvr,ruok,mntr,stat,cons',
        'maxClientCnxns=0',
        'preAllocSize=1024',
        'snapCount=100000',
        `forceSync=${options.forceSync ? 'yes' : 'no'}`,
      ];
      if (size > 1) {
        ports.forEach((q, j) => lines.push(`server.${j + 1}=127.0.0.1:${q.quorum}:${q.election}`));
        writeFileSync(join(dir, 'data', 'myid'), `${id}\n`);
      }
      writeFileSync(join(dir, 'zoo.cfg'), lines.join('\n') + '\n');
      return new ZkNode(id, dir, p.client);
    });
    const cluster = new ZkCluster(nodes, root, tickTime);
    for (const node of nodes) node.launch();
    try {
      await cluster.waitReady();
    } catch (error) {
      await cluster.stop();
      throw error;
    }
    return cluster;
  }

  /** The client connection string of every node. */
  get connectionString(): string {
    return this.nodes.map((n) => n.address).join(',');
  }

  /** Waits until every running node answers `srvr` with a mode (an ensemble has a leader). */
  async waitReady(timeoutMs = 30_000): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const modes = await Promise.all(this.nodes.map((n) => (n.running ? n.mode() : Promise.resolve('down'))));
      const serving = modes.every((m) => m !== null);
      const hasLeader = this.nodes.length === 1 || modes.includes('leader');
      if (serving && hasLeader) return;
      if (Date.now() > deadline) throw new Error(`ZooKeeper did not become ready: ${modes.join(',')} (logs in ${this.root})`);
      await new Promise((r) => setTimeout(r, 100));
    }
  }

  /** The current leader (ensemble) or the standalone node, or null. */
  async leader(): Promise<ZkNode | null> {
    for (const node of this.nodes) {
      const mode = await node.mode();
      if (mode === 'leader' || mode === 'standalone') return node;
    }
    return null;
  }

  /** Stops every node and removes the temp dirs. */
  async stop(): Promise<void> {
    await Promise.all(this.nodes.map((n) => n.kill()));
    rmSync(this.root, { recursive: true, force: true });
  }
}

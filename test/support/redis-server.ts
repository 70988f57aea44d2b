/**
 * Real redis-server processes for tests (`$HOLDFAST_REDIS_SERVER`, default `redis-server`; see binaries.ts): started on free loopback ports with persistence off, and controllable
 * (stop, kill -9, SIGSTOP/SIGCONT, restart on the same port). Never touches a server it did not start.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { createServer, connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { REDIS_SERVER } from './binaries.js';

/** A free TCP port on 127.0.0.1 (asks the OS, then closes). */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.unref();
    server.on('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() => (typeof address === 'object' && address ? resolve(address.port) : reject(new Error('no port'))));
    });
  });
}

/** Sends one inline command over a raw socket and returns the first reply line (no client library involved). */
export function rawCommand(port: number, command: string, timeoutMs = 1000): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1');
    let data = '';
    const timer = setTimeout(() => {
      socket.destroy();
      reject(new Error(`no reply from port ${port}`));
    }, timeoutMs);
    socket.on('connect', () => socket.write(command + '\r\n'));
    socket.on('data', (chunk) => {
      data += chunk.toString();
      if (data.includes('\r\n')) {
        clearTimeout(timer);
        socket.end();
        resolve(data.split('\r\n')[0] ?? '');
      }
    });
    socket.on('error', (error) => {
      clearTimeout(timer);
      reject(error);
    });
  });
}

export interface RedisServerOptions {
  /** Extra `redis-server` arguments, e.g. `['--appendonly', 'yes']`. */
  args?: string[];
  port?: number;
}

/** One redis-server child process. */
export class RedisServer {
  #child: ChildProcess | undefined;
  readonly dir: string;
  paused = false;

  private constructor(
    readonly port: number,
    readonly args: string[],
  ) {
    this.dir = mkdtempSync(join(tmpdir(), 'holdfast-redis-'));
  }

  /** Starts a server on a free port and waits until it answers PING. */
  static async start(options: RedisServerOptions = {}): Promise<RedisServer> {
    const server = new RedisServer(options.port ?? (await freePort()), options.args ?? []);
    await server.launch();
    return server;
  }

  get url(): string {
    return `redis://127.0.0.1:${this.port}`;
  }
  get pid(): number | undefined {
    return this.#child?.pid;
  }
  get running(): boolean {
    return this.#child !== undefined && this.#child.exitCode === null && this.#child.signalCode === null;
  }

  async launch(): Promise<void> {
    const args = ['--port', String(this.port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--dir', this.dir, '--daemonize', 'no', ...this.args];
    const child = spawn(REDIS_SERVER, args, { stdio: ['ignore', 'ignore', 'pipe'] });
    this.#child = child;
    let stderr = '';
    child.stderr?.on('data', (c: Buffer) => (stderr += c.toString()));
    const deadline = Date.now() + 10_000;
    for (;;) {
      if (child.exitCode !== null) throw new Error(`${REDIS_SERVER} exited with ${child.exitCode}: ${stderr}`);
      try {
        if ((await rawCommand(this.port, 'PING', 300)) === '+PONG') return;
      } catch {
        /* not up yet */
      }
      if (Date.now() > deadline) throw new Error(`${REDIS_SERVER} on ${this.port} did not start: ${stderr}`);
      await new Promise((r) => setTimeout(r, 25));
    }
  }

  /** SIGSTOP: the server stops answering but keeps its connections and data. */
  pause(): void {
    this.#child?.kill('SIGSTOP');
    this.paused = true;
  }
  /** SIGCONT. */
  resume(): void {
    this.#child?.kill('SIGCONT');
    this.paused = false;
  }

  /** kill -9 and wait for the exit. Data is gone (no persistence unless args asked for it). */
  async kill(): Promise<void> {
    const child = this.#child;
    if (!child || !this.running) return;
    if (this.paused) this.resume();
    const exited = new Promise((r) => child.once('exit', r));
    child.kill('SIGKILL');
    await exited;
  }

  /**
   * kill -9, then starts again on the same port. Without persistence (the default) it comes back empty; with
   * `--appendonly yes` it reloads its AOF unless `wipe` deletes the data directory's files first (a disk lost with
   * the machine).
   */
  async restart(options: { wipe?: boolean } = {}): Promise<void> {
    await this.kill();
    if (options.wipe) {
      rmSync(this.dir, { recursive: true, force: true });
      mkdirSync(this.dir, { recursive: true });
    }
    await this.launch();
  }

  /** Kills the server and removes its directory. */
  async stop(): Promise<void> {
    await this.kill();
    rmSync(this.dir, { recursive: true, force: true });
  }
}

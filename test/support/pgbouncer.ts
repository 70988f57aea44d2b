/**
 * A real PgBouncer in front of the test PostgreSQL server, as a child process of the test (`pgbouncer <ini>`, not a
 * daemon; scripts/ensure-servers.sh installs the binary and never starts the system's service). Each one gets its own
 * directory with a generated ini and userlist, listens on a free port on 127.0.0.1 only (no Unix socket), logs to
 * stderr (kept in `log`), and is killed and its directory removed by `stop()`.
 *
 * PgBouncer refuses to run as root: under root it runs as the `postgres` system user (spawned with that uid and gid;
 * its directory is chowned to it).
 *
 * Authentication: `auth_type = trust` towards the clients (a throwaway instance on loopback), the user names in the
 * generated userlist (`postgres` and the `users` given, with their passwords, which PgBouncer also uses to log in to a
 * server that asks for one). `ignore_startup_parameters = extra_float_digits,options`: PgBouncer refuses a client that
 * sends a startup parameter it does not know, and drivers send these (node-postgres sends `options` when asked to).
 *
 * What the tests in test/postgres/pgbouncer.test.ts show of transaction pooling (pool_mode = transaction):
 * - parameterised queries (extended protocol, unnamed statements) and transactions work through it;
 * - a server connection serves many clients: with default_pool_size = 1, two connected clients' queries run in the
 *   same backend (same pg_backend_pid()); session state (SET, LISTEN, advisory locks, prepared statements) therefore
 *   does not belong to the client that made it;
 * - LISTEN does not work: a client that ran LISTEN through the bouncer never receives a NOTIFY, whether the NOTIFY is
 *   sent directly to the server or through the bouncer. The LISTEN ran on a server connection that went back to the
 *   pool when the statement ended (it stays listening there). A notification that reaches it while no client is
 *   linked is dropped (PgBouncer 1.18 logs "got packet 'A' from server when not linked" and keeps the connection);
 *   one that arrives while another client is linked goes to that client: with default_pool_size = 1, a NOTIFY sent
 *   through the bouncer is received by its own sender, not by the listener.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { chmodSync, chownSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { POSTGRES_URL } from './postgres.js';
import { freePort } from './redis-server.js';

export const PGBOUNCER = process.env.HOLDFAST_PGBOUNCER?.trim() || 'pgbouncer';

export interface PgBouncerOptions {
  poolMode: 'transaction' | 'session' | 'statement';
  /** The PostgreSQL server, `host:port` (default: POSTGRES_URL's host and port, i.e. 127.0.0.1:5432). */
  target?: string;
  /** max_client_conn (default 100). */
  maxClientConn?: number;
  /** default_pool_size: server connections per user and database (default 20). */
  defaultPoolSize?: number;
  /** Login roles besides `postgres` that clients may connect as (e.g. a TestRole from postgres.ts). */
  users?: Array<{ name: string; password?: string }>;
  /** More `[pgbouncer]` settings, written as `key = value`. */
  settings?: Record<string, string | number>;
}

/** The user to run as: ourselves, or `postgres` (else `nobody`) when we are root. */
function runAs(): { uid: number; gid: number } | undefined {
  if (process.getuid?.() !== 0) return undefined;
  for (const user of ['postgres', 'nobody']) {
    const uid = spawnSync('id', ['-u', user], { encoding: 'utf8' });
    const gid = spawnSync('id', ['-g', user], { encoding: 'utf8' });
    if (uid.status === 0 && gid.status === 0) return { uid: Number(uid.stdout.trim()), gid: Number(gid.stdout.trim()) };
  }
  throw new Error('pgbouncer does not run as root, and neither a postgres nor a nobody user was found');
}

function portOpen(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect(port, '127.0.0.1');
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
  });
}

const quote = (s: string): string => `"${s.replace(/"/g, '""')}"`;

/** One pgbouncer child process. */
export class PgBouncer {
  #child: ChildProcess | undefined;
  #log = '';

  private constructor(
    readonly port: number,
    readonly dir: string,
  ) {}

  /** Starts pgbouncer on a free loopback port and waits until it accepts connections. */
  static async start(options: PgBouncerOptions): Promise<PgBouncer> {
    const server = new URL(POSTGRES_URL);
    const [host, port] = (options.target ?? `${server.hostname}:${server.port || 5432}`).split(':');
    const dir = mkdtempSync(join(tmpdir(), 'holdfast-pgbouncer-'));
    const bouncer = new PgBouncer(await freePort(), dir);
    const users = [{ name: 'postgres', password: '' }, ...(options.users ?? [])];
    writeFileSync(join(dir, 'userlist.txt'), users.map((u) => `${quote(u.name)} ${quote(u.password ?? '')}\n`).join(''));
    const settings: Record<string, string | number> = {
      listen_addr: '127.0.0.1',
      listen_port: bouncer.port,
      unix_socket_dir: '', // no Unix socket
      auth_type: 'trust',
      auth_file: join(dir, 'userlist.txt'),
      admin_users: 'postgres',
      pool_mode: options.poolMode,
      max_client_conn: options.maxClientConn ?? 100,
      default_pool_size: options.defaultPoolSize ?? 20,
      ignore_startup_parameters: 'extra_float_digits,options',
      ...options.settings,
    };
    const ini =
      `[databases]\n* = host=${host} port=${port ?? 5432}\n\n[pgbouncer]\n` +
      Object.entries(settings)
        .map(([key, value]) => `${key} = ${value}\n`)
        .join('');
    writeFileSync(join(dir, 'pgbouncer.ini'), ini);
    const user = runAs();
    if (user) {
      for (const path of [dir, join(dir, 'pgbouncer.ini'), join(dir, 'userlist.txt')]) chownSync(path, user.uid, user.gid);
      chmodSync(dir, 0o700);
    }
    const child = spawn(PGBOUNCER, [join(dir, 'pgbouncer.ini')], { stdio: ['ignore', 'pipe', 'pipe'], cwd: dir, ...user });
    bouncer.#child = child;
    child.stdout?.on('data', (c: Buffer) => (bouncer.#log += c.toString()));
    child.stderr?.on('data', (c: Buffer) => (bouncer.#log += c.toString()));
    const spawnError = new Promise<Error>((resolve) => child.once('error', resolve));
    let failure: Error | undefined;
    void spawnError.then((e) => (failure = e));
    const deadline = Date.now() + 10_000;
    for (;;) {
      if (failure || child.exitCode !== null || child.signalCode !== null) {
        rmSync(dir, { recursive: true, force: true });
        throw new Error(`${PGBOUNCER} did not start (${failure?.message ?? `exit ${child.exitCode ?? child.signalCode}`}): ${bouncer.#log}`);
      }
      if (await portOpen(bouncer.port)) return bouncer;
      if (Date.now() > deadline) {
        await bouncer.stop();
        throw new Error(`${PGBOUNCER} on ${bouncer.port} did not listen within 10 s: ${bouncer.#log}`);
      }
      await new Promise((r) => setTimeout(r, 25));
    }
  }

  /** postgres://postgres@127.0.0.1:<port>/postgres */
  get url(): string {
    return this.urlFor('postgres');
  }
  /** The bouncer's URL as another user (one of `users`). */
  urlFor(user: string, password?: string, database = 'postgres'): string {
    const url = new URL(`postgres://127.0.0.1:${this.port}/${database}`);
    url.username = user;
    if (password) url.password = password;
    return url.toString();
  }
  get pid(): number | undefined {
    return this.#child?.pid;
  }
  /** What pgbouncer wrote (its log goes to stderr). */
  get log(): string {
    return this.#log;
  }
  get running(): boolean {
    return this.#child !== undefined && this.#child.exitCode === null && this.#child.signalCode === null;
  }

  /** SIGTERM (immediate shutdown; SIGKILL after 5 s), then removes its directory. */
  async stop(): Promise<void> {
    const child = this.#child;
    if (child && this.running) {
      const exited = new Promise((r) => child.once('exit', r));
      child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), 5000);
      await exited;
      clearTimeout(timer);
    }
    rmSync(this.dir, { recursive: true, force: true });
  }
}

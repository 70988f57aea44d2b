/**
 * Finds a Redis for the demo: `--url`, else `$REDIS_URL`, else one at 127.0.0.1:6379; else a throwaway
 * `redis-server` from PATH on a free port (no persistence, removed afterwards); else holdfast's in-process backend
 * (holdfast/memory), served to the demo's worker processes on a loopback port.
 *
 * @module
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CliError, EXIT } from '../common.js';
import { connect, DEFAULT_URL, type Connection } from '../connect.js';

/** The Redis the demo runs on. */
export interface DemoRedis {
  url: string;
  connection: Connection;
  /** Where it came from, for the header line. */
  origin: 'REDIS_URL' | '--url' | 'localhost' | 'throwaway' | 'in-process';
  /** Why the demo runs where it does, when it fell back (for the header line). */
  note?: string;
  /** Stops the throwaway server, if the demo started one. */
  stop(): Promise<void>;
}

export const NO_REDIS_HINT =
  'the demo needs Redis: set REDIS_URL, or run one on 127.0.0.1:6379 (docker run --rm -p 6379:6379 redis:7), ' +
  'or install redis-server so the demo can start its own (apt-get install redis-server | brew install redis)';

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.unref();
    server.on('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() => (typeof address === 'object' && address ? resolve(address.port) : reject(new Error('no free port'))));
    });
  });
}

/** Resolves the demo's Redis; throws a {@link CliError} with {@link NO_REDIS_HINT} when there is none. */
export async function findRedis(url: string | undefined): Promise<DemoRedis> {
  const nothing = async () => {};
  if (url !== undefined) {
    // asked for by name: that one or an error
    return { url, connection: await connect({ url, connectTimeout: 3000 }), origin: '--url', stop: nothing };
  }
  const env = process.env.REDIS_URL || undefined;
  const tried = env ?? DEFAULT_URL;
  try {
    const connection = await connect({ url: tried, connectTimeout: env === undefined ? 500 : 3000 });
    return { url: tried, connection, origin: env === undefined ? 'localhost' : 'REDIS_URL', stop: nothing };
  } catch (error) {
    if (!(error instanceof CliError) || error.message.startsWith('no Redis client')) throw error;
  }
  try {
    return await startThrowaway();
  } catch (error) {
    if (!(error instanceof CliError) || error.message !== NO_REDIS_HINT) throw error;
  }
  return startInProcess(`no Redis at ${env === undefined ? tried : '$REDIS_URL'} and no redis-server on PATH`);
}

/**
 * Runs the demo on holdfast's in-process backend: one memory store, served over RESP on a free loopback port so the
 * worker processes reach it with their usual client (`stop()` closes both).
 */
export async function startInProcess(why: string): Promise<DemoRedis> {
  let memory: typeof import('../../memory/index.js');
  try {
    memory = await import('../../memory/index.js');
  } catch (error) {
    throw new CliError(NO_REDIS_HINT, EXIT.REDIS_UNAVAILABLE, { cause: error });
  }
  const store = memory.memoryStore();
  let server: Awaited<ReturnType<typeof memory.serveMemoryStore>>;
  try {
    server = await memory.serveMemoryStore(store);
  } catch (error) {
    store.close();
    // fengari (the Lua VM the in-process backend runs on) is missing: say what to install
    throw new CliError(`${NO_REDIS_HINT}, or install fengari for holdfast's in-process backend (npm install fengari)`, EXIT.REDIS_UNAVAILABLE, { cause: error });
  }
  const stop = async () => {
    await server.close();
    store.close();
  };
  try {
    const connection = await connect({ url: server.url, connectTimeout: 3000 });
    return { url: server.url, connection, origin: 'in-process', note: why, stop };
  } catch (error) {
    await stop();
    throw error;
  }
}

/** Starts a throwaway `redis-server` from PATH on a free port (no persistence; `stop()` kills it and removes its directory). */
export async function startThrowaway(): Promise<DemoRedis> {
  const port = await freePort();
  const dir = mkdtempSync(join(tmpdir(), 'holdfast-demo-'));
  const child: ChildProcess = spawn(
    'redis-server',
    ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--dir', dir, '--daemonize', 'no'],
    { stdio: 'ignore' },
  );
  const failed = new Promise<Error>((resolve) => {
    child.once('error', resolve);
    child.once('exit', (code) => resolve(new Error(`redis-server exited with ${code}`)));
  });
  const url = `redis://127.0.0.1:${port}`;
  const stop = async () => {
    if (child.exitCode === null && child.signalCode === null) {
      const exited = new Promise((r) => child.once('exit', r));
      child.kill('SIGKILL');
      await exited;
    }
    rmSync(dir, { recursive: true, force: true });
  };
  const deadline = Date.now() + 5000;
  for (;;) {
    const early = await Promise.race([failed, new Promise<undefined>((r) => setTimeout(r, 50))]);
    if (early) {
      rmSync(dir, { recursive: true, force: true });
      throw new CliError(NO_REDIS_HINT, EXIT.REDIS_UNAVAILABLE, { cause: early });
    }
    try {
      const connection = await connect({ url, connectTimeout: 300 });
      return { url, connection, origin: 'throwaway', stop };
    } catch (error) {
      if (Date.now() > deadline) {
        await stop();
        throw new CliError(`started redis-server on port ${port}, but it did not answer`, EXIT.REDIS_UNAVAILABLE, { cause: error });
      }
    }
  }
}

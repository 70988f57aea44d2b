/**
 * npm run demo — several worker processes increment one counter in Redis with GET then SET.
 * First without a lock (updates get lost), then with holdfast (the total is exact).
 *
 * Redis: $REDIS_URL, else 127.0.0.1:6379, else a throwaway redis-server from PATH on a free port.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Redis } from 'ioredis';
import { Holdfast } from '../src/index.js';

const WORKERS = 4;
const INCREMENTS = 100;

async function ping(url: string): Promise<boolean> {
  const client = new Redis(url, { lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null, connectTimeout: 500 });
  client.on('error', () => {});
  try {
    await client.connect();
    return (await client.ping()) === 'PONG';
  } catch {
    return false;
  } finally {
    client.disconnect();
  }
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer().listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() => (typeof address === 'object' && address ? resolve(address.port) : reject(new Error('no free port'))));
    });
  });
}

/** Finds a Redis to talk to; the returned `stop` ends a server this demo started (and only that). */
export async function findRedis(): Promise<{ url: string; stop: () => void; origin: string }> {
  if (process.env.REDIS_URL) return { url: process.env.REDIS_URL, stop: () => {}, origin: 'REDIS_URL' };
  if (await ping('redis://127.0.0.1:6379')) return { url: 'redis://127.0.0.1:6379', stop: () => {}, origin: '127.0.0.1:6379' };
  const port = await freePort();
  const dir = mkdtempSync(join(tmpdir(), 'holdfast-demo-'));
  let child: ChildProcess;
  try {
    child = spawn('redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--dir', dir], { stdio: 'ignore' });
    await new Promise<void>((resolve, reject) => {
      child.once('error', reject);
      child.once('spawn', () => resolve());
    });
  } catch {
    console.error('No Redis found: set REDIS_URL, start one on 127.0.0.1:6379, or install redis-server (Debian/Ubuntu: apt-get install redis-server; macOS: brew install redis).');
    process.exit(1);
  }
  const url = `redis://127.0.0.1:${port}`;
  for (let i = 0; i < 100 && !(await ping(url)); i++) await new Promise((r) => setTimeout(r, 50));
  return {
    url,
    origin: `a throwaway redis-server on port ${port}`,
    stop: () => {
      child.kill('SIGKILL');
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

async function worker(url: string, prefix: string, mode: string): Promise<void> {
  const redis = new Redis(url);
  const holdfast = new Holdfast({ redis, prefix });
  const key = `${prefix}counter`;
  const increment = async (): Promise<void> => {
    const value = Number((await redis.get(key)) ?? 0);
    await new Promise((r) => setTimeout(r, 1)); // the read-modify-write window
    await redis.set(key, value + 1);
  };
  for (let i = 0; i < INCREMENTS; i++) {
    if (mode === 'holdfast') await holdfast.withLock('counter', increment);
    else await increment();
  }
  await holdfast.close();
  redis.disconnect();
}

async function round(url: string, mode: 'no lock' | 'holdfast'): Promise<{ total: number; ms: number }> {
  const prefix = `holdfast-demo:${randomBytes(4).toString('hex')}:`;
  const self = fileURLToPath(import.meta.url);
  const started = performance.now();
  const children = Array.from({ length: WORKERS }, () =>
    spawn(process.execPath, ['--import', 'tsx', self, '--worker', url, prefix, mode === 'holdfast' ? 'holdfast' : 'none'], { stdio: 'inherit' }),
  );
  await Promise.all(children.map((c) => new Promise((r) => c.once('exit', r))));
  const ms = performance.now() - started;
  const redis = new Redis(url);
  const total = Number((await redis.get(`${prefix}counter`)) ?? 0);
  await redis.del(`${prefix}counter`, `${prefix}{counter}:fence`);
  redis.disconnect();
  return { total, ms };
}

if (process.argv[2] === '--worker') {
  await worker(process.argv[3] ?? '', process.argv[4] ?? '', process.argv[5] ?? 'none');
} else {
  const { url, stop, origin } = await findRedis();
  try {
    const expected = WORKERS * INCREMENTS;
    console.log(`Redis: ${origin}. ${WORKERS} processes each add 1 to one counter ${INCREMENTS} times (GET, then SET).\n`);
    const bare = await round(url, 'no lock');
    console.log(`without a lock:   ${String(bare.total).padStart(4)} / ${expected}  (${expected - bare.total} updates lost)`);
    const locked = await round(url, 'holdfast');
    console.log(`with holdfast:    ${String(locked.total).padStart(4)} / ${expected}  (${locked.total === expected ? 'exact' : 'WRONG'}, ${(locked.ms / 1000).toFixed(1)} s)`);
    if (locked.total !== expected) process.exitCode = 1;
  } finally {
    stop();
  }
}

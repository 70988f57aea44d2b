/**
 * The recipes across several OS processes against one real Redis: each child is its own holdfast client (ioredis and
 * node-redis mixed), started together, counting in Redis what it did.
 */
import { spawn } from 'node:child_process';
import { mkdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { build } from 'esbuild';
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { Redis } from 'ioredis';
import { RedisServer } from '../support/redis-server.js';

const ROOT = join(import.meta.dirname, '..', '..');
/** The worker, bundled once to plain JavaScript: 20 children then start in half the CPU time tsx would take. */
const WORKER = join(ROOT, '.test-tmp', `recipes-worker-${process.pid}.mjs`);

/** Runs one worker process; resolves its JSON result line. */
function runWorker(config: Record<string, unknown>): Promise<unknown> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [WORKER, JSON.stringify(config)], { stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    child.stdout.on('data', (c: Buffer) => (out += c.toString()));
    child.stderr.on('data', (c: Buffer) => (err += c.toString()));
    child.on('error', reject);
    child.on('exit', (code) => {
      const line = out.trim().split('\n').pop() ?? '';
      if (code !== 0 || !line) reject(new Error(`worker exited with ${code}: ${err || out}`));
      else resolve(JSON.parse(line));
    });
  });
}

/** Starts `count` workers, waits until all are ready, then sets their common start time (`startAt(now)`). */
async function runWorkers(redis: Redis, prefix: string, count: number, config: (i: number) => Record<string, unknown>, startAt: (now: number) => number): Promise<unknown[]> {
  const results = Promise.all(Array.from({ length: count }, (_, i) => runWorker({ prefix, ...config(i) })));
  results.catch(() => {});
  for (;;) {
    if (Number(await redis.get(`${prefix}ready`)) >= count) break;
    await Promise.race([new Promise((r) => setTimeout(r, 50)), results]);
  }
  await redis.set(`${prefix}go`, String(startAt(Date.now())));
  return results;
}

const adapterOf = (i: number): string => (i % 2 === 0 ? 'ioredis' : 'node-redis');

void describe('recipes across OS processes', () => {
  let server: RedisServer;
  let redis: Redis;

  before(async () => {
    mkdirSync(join(ROOT, '.test-tmp'), { recursive: true });
    await build({
      entryPoints: [join(import.meta.dirname, 'fixtures', 'worker.ts')],
      bundle: true,
      platform: 'node',
      format: 'esm',
      target: 'node20',
      outfile: WORKER,
      packages: 'external',
      logLevel: 'warning',
    });
    server = await RedisServer.start();
    redis = new Redis(server.url);
  });
  after(async () => {
    redis.disconnect();
    await server.stop();
    rmSync(WORKER, { force: true });
  });

  void it('a job scheduled every second for 10 s across 3 processes runs once per tick', { timeout: 90_000 }, async () => {
    const prefix = 'sched:';
    // They schedule at the start time (half a second before a whole second) and stop 10 s later: 10 ticks.
    let first = 0;
    const results = (await runWorkers(redis, prefix, 3, (i) => ({ mode: 'scheduler', url: server.url, adapter: adapterOf(i), runFor: 10_000 }), (now) => {
      first = Math.ceil((now + 500) / 1000) * 1000 + 1000;
      return first - 500;
    })) as { errors: string[] }[];
    for (const r of results) assert.deepEqual(r.errors, []);
    const runs = await redis.hgetall(`${prefix}runs`);
    const ticks = Object.keys(runs).map(Number).sort((a, b) => a - b);
    const expected = Array.from({ length: 10 }, (_, k) => first + k * 1000);
    // Each of the 10 ticks ran; a worker that stopped late (a loaded machine) may have run one more after them.
    assert.deepEqual(
      ticks.filter((t) => t <= expected[9]!),
      expected,
      `ticks run: ${ticks.join(', ')}`,
    );
    assert.ok(ticks.length <= 11, `ticks run: ${ticks.join(', ')}`);
    for (const tick of ticks) assert.equal(runs[String(tick)], '1', `tick ${tick} ran ${runs[String(tick)]} times`);
  });

  void it('50 concurrent getOrLoad calls in each of 3 processes on a cold key run the loader once', { timeout: 90_000 }, async () => {
    const prefix = 'cache:';
    const results = (await runWorkers(redis, prefix, 3, (i) => ({ mode: 'cache', url: server.url, adapter: adapterOf(i), calls: 50 }), (now) => now + 200)) as {
      values: { value: number; loadedBy: number }[];
    }[];
    assert.equal(await redis.get(`${prefix}loads`), '1');
    const values = results.flatMap((r) => r.values);
    assert.equal(values.length, 150);
    const first = values[0];
    for (const v of values) assert.deepEqual(v, first);
    assert.equal(first?.value, 42);
  });

  void it('20 processes taking stock concurrently never oversell and drain it to exactly 0', { timeout: 120_000 }, async () => {
    const prefix = 'stock:';
    const total = 3000;
    const segments = 8;
    const keys = Array.from({ length: segments }, (_, i) => `${prefix}{sku}:seg:${i}`);
    // Uneven on purpose: some segments empty, so takes must move on and combine.
    const per = [0, 900, 0, 600, 300, 0, 1200, 0];
    await redis.mset(...keys.flatMap((k, i) => [k, String(per[i])]));
    assert.equal(per.reduce((a, b) => a + b), total);
    const results = (await runWorkers(redis, prefix, 20, (i) => ({ mode: 'stock', url: server.url, adapter: adapterOf(i), segments }), (now) => now + 200)) as {
      taken: number;
    }[];
    const taken = results.reduce((sum, r) => sum + r.taken, 0);
    assert.equal(taken, total, 'every unit taken exactly once: no oversell, nothing refused while stock remained');
    const left = (await redis.mget(...keys)).map(Number);
    assert.deepEqual(left, Array(segments).fill(0));
    assert.ok(results.filter((r) => r.taken > 0).length >= 10, `most processes got some stock: ${results.map((r) => r.taken).join(',')}`);
  });
});

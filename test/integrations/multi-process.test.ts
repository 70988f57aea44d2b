/**
 * The scheduler adapters across OS processes against one real Redis: node-cron with holdfast's RunCoordinator in 3
 * processes, a Nest application with @Cron + @RunOnce in 2 (ioredis and node-redis mixed). Each fire runs once.
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
const WORKER = join(ROOT, '.test-tmp', `integrations-worker-${process.pid}.mjs`);

interface Result {
  ran: number;
  skipped: number;
  errors: string[];
}

function runWorker(config: Record<string, unknown>): Promise<Result> {
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
      else resolve(JSON.parse(line) as Result);
    });
  });
}

/** Starts `count` workers, waits until all are ready, then sets their common start time: 300 ms past a whole second. */
async function runWorkers(redis: Redis, prefix: string, count: number, config: (i: number) => Record<string, unknown>): Promise<{ results: Result[]; start: number }> {
  const results = Promise.all(Array.from({ length: count }, (_, i) => runWorker({ prefix, ...config(i) })));
  results.catch(() => {});
  for (;;) {
    if (Number(await redis.get(`${prefix}ready`)) >= count) break;
    await Promise.race([new Promise((r) => setTimeout(r, 50)), results]);
  }
  const start = Math.ceil((Date.now() + 300) / 1000) * 1000 + 300;
  await redis.set(`${prefix}go`, String(start));
  return { results: await results, start };
}

const adapterOf = (i: number): string => (i % 2 === 0 ? 'ioredis' : 'node-redis');

/** Every tick from the first whole second after `start` to `end` ran exactly once (a tick at either edge may be missing). */
async function assertOncePerTick(redis: Redis, prefix: string, start: number, runFor: number): Promise<void> {
  const runs = await redis.hgetall(`${prefix}runs`);
  const ticks = Object.keys(runs)
    .map(Number)
    .sort((a, b) => a - b);
  for (const tick of ticks) assert.equal(runs[String(tick)], '1', `tick ${tick} ran ${runs[String(tick)]} times`);
  const inner = Array.from({ length: Math.floor(runFor / 1000) - 2 }, (_, k) => Math.ceil(start / 1000) * 1000 + 1000 + k * 1000);
  for (const tick of inner) assert.ok(ticks.includes(tick), `tick ${tick} ran (ran: ${ticks.join(', ')})`);
}

void describe('scheduler adapters across OS processes', () => {
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

  void it('node-cron with holdfastRunCoordinator in 3 processes: each fire of a distributed task runs once', { timeout: 60_000 }, async () => {
    const prefix = 'nc:';
    const runFor = 6000;
    const { results, start } = await runWorkers(redis, prefix, 3, (i) => ({ mode: 'node-cron', url: server.url, adapter: adapterOf(i), runFor }));
    for (const r of results) assert.deepEqual(r.errors, []);
    for (const r of results) assert.ok(r.ran + r.skipped >= 4, `every process took part in the fires: ${JSON.stringify(results)}`);
    await assertOncePerTick(redis, prefix, start, runFor);
  });

  void it('a Nest application with @Cron + @RunOnce in 2 processes: each tick runs once', { timeout: 60_000 }, async () => {
    const prefix = 'nest:';
    const runFor = 6000;
    const { results, start } = await runWorkers(redis, prefix, 2, (i) => ({ mode: 'nestjs', url: server.url, adapter: adapterOf(i), runFor, runOnceAbove: i === 1 }));
    for (const r of results) assert.deepEqual(r.errors, []);
    for (const r of results) assert.ok(r.ran + r.skipped >= 4, `both processes (either decorator order) took part in the ticks: ${JSON.stringify(results)}`);
    await assertOncePerTick(redis, prefix, start, runFor);
  });
});

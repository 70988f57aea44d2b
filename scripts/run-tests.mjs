#!/usr/bin/env node
// Runs every test/**/*.test.ts with Node's test runner (tsx for TypeScript). Extra args pass through,
// e.g. `node scripts/run-tests.mjs test/primitives/lock.test.ts`. The slow test/topologies/ suites (Sentinel,
// Cluster) run only with `--topologies` (`npm run test:topologies`) or when named; `--topologies` runs them once per
// server in HOLDFAST_TOPOLOGY_SERVERS (default `redis,valkey`): the binaries of each go to the test support through
// HOLDFAST_REDIS_SERVER / HOLDFAST_REDIS_CLI / HOLDFAST_REDIS_SENTINEL.
import { spawnSync } from 'node:child_process';
import process from 'node:process';
import { readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';

function walk(dir) {
  return readdirSync(dir)
    .sort()
    .flatMap((entry) => {
      const path = join(dir, entry);
      if (statSync(path).isDirectory()) return entry === 'support' || (entry === 'topologies' && !topologies) ? [] : walk(path);
      return entry.endsWith('.test.ts') ? [path] : [];
    });
}

const SERVERS = {
  redis: { HOLDFAST_REDIS_SERVER: 'redis-server', HOLDFAST_REDIS_CLI: 'redis-cli', HOLDFAST_REDIS_SENTINEL: 'redis-sentinel' },
  valkey: { HOLDFAST_REDIS_SERVER: 'valkey-server', HOLDFAST_REDIS_CLI: 'valkey-cli', HOLDFAST_REDIS_SENTINEL: 'valkey-sentinel' },
};

const args = process.argv.slice(2);
const topologies = args.includes('--topologies');
const files = args.filter((a) => !a.startsWith('-'));
const flags = args.filter((a) => a.startsWith('-') && a !== '--topologies');
const targets = files.length > 0 ? files : topologies ? walk('test/topologies') : walk('test');

function run(env) {
  const result = spawnSync(
    process.execPath,
    ['--import', 'tsx', '--test', topologies ? '--test-concurrency=1' : '--test-concurrency=3', '--test-timeout=400000', ...flags, ...targets],
    { stdio: 'inherit', env: { ...process.env, ...env } },
  );
  return result.status ?? 1;
}

if (!topologies) process.exit(run({}));

const servers = (process.env.HOLDFAST_TOPOLOGY_SERVERS || 'redis,valkey').split(',').map((s) => s.trim()).filter(Boolean);
let status = 0;
for (const name of servers) {
  const env = SERVERS[name];
  if (!env) {
    console.error(`HOLDFAST_TOPOLOGY_SERVERS: unknown server ${name} (known: ${Object.keys(SERVERS).join(', ')})`);
    process.exit(2);
  }
  const version = spawnSync(env.HOLDFAST_REDIS_SERVER, ['--version'], { encoding: 'utf8' });
  if (version.status !== 0) {
    console.error(`${env.HOLDFAST_REDIS_SERVER} is not installed: the topology suites cannot run on ${name} (.ci/run installs it)`);
    status = 1;
    continue;
  }
  console.log(`# topology suites on ${version.stdout.trim().split(' ').slice(0, 3).join(' ')}`);
  const code = run(env);
  if (code !== 0) status = code;
}
process.exit(status);

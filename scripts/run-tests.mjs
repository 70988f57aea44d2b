#!/usr/bin/env node
// Runs every test/**/*.test.ts with Node's test runner (tsx for TypeScript). Extra args pass through,
// e.g. `node scripts/run-tests.mjs test/primitives/lock.test.ts`. The slow test/topologies/ suites (Sentinel,
// Cluster) run only with `--topologies` (`npm run test:topologies`) or when named.
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

const args = process.argv.slice(2);
const topologies = args.includes('--topologies');
const files = args.filter((a) => !a.startsWith('-'));
const flags = args.filter((a) => a.startsWith('-') && a !== '--topologies');
const targets = files.length > 0 ? files : topologies ? walk('test/topologies') : walk('test');
const result = spawnSync(
  process.execPath,
  ['--import', 'tsx', '--test', topologies ? '--test-concurrency=1' : '--test-concurrency=3', '--test-timeout=400000', ...flags, ...targets],
  { stdio: 'inherit' },
);
process.exit(result.status ?? 1);

#!/usr/bin/env node
// Runs every test/**/*.test.ts with Node's test runner (tsx for TypeScript). Extra args pass through,
// e.g. `node scripts/run-tests.mjs test/primitives/lock.test.ts`.
import { spawnSync } from 'node:child_process';
import process from 'node:process';
import { readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';

function walk(dir) {
  return readdirSync(dir)
    .sort()
    .flatMap((entry) => {
      const path = join(dir, entry);
      if (statSync(path).isDirectory()) return entry === 'support' ? [] : walk(path);
      return entry.endsWith('.test.ts') ? [path] : [];
    });
}

const args = process.argv.slice(2);
const files = args.filter((a) => !a.startsWith('-'));
const flags = args.filter((a) => a.startsWith('-'));
const targets = files.length > 0 ? files : walk('test');
const result = spawnSync(
  process.execPath,
  ['--import', 'tsx', '--test', '--test-concurrency=3', '--test-timeout=400000', ...flags, ...targets],
  { stdio: 'inherit' },
);
process.exit(result.status ?? 1);

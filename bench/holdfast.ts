/**
 * The holdfast the benchmarks measure: the shipped build (`dist/`), which is what users run — not the TypeScript
 * sources under tsx, whose transform wraps every function in a naming helper and so adds per-call work the package
 * does not have. `npm run bench*` build first; run by hand, `npm run build` first. A build older than the sources is
 * refused, so a figure never silently comes from stale code.
 */
import { readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('..', import.meta.url));

function newest(dir: string): number {
  let t = 0;
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    t = Math.max(t, entry.isDirectory() ? newest(path) : statSync(path).mtimeMs);
  }
  return t;
}

let built = 0;
try {
  built = statSync(join(root, 'dist/index.js')).mtimeMs;
} catch {
  /* not built */
}
if (built < newest(join(root, 'src'))) {
  throw new Error('bench: dist/ is missing or older than src/ — run `npm run build` first (the benchmarks measure the shipped build)');
}

export { Holdfast, Redlock } from '../dist/index.js';
export { ZooKeeperHoldfast } from '../dist/zookeeper/index.js';

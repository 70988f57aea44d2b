#!/usr/bin/env node
// `npm run demo`: builds the holdfast command from source (the CLI entry only: a second or two, no type
// declarations), then runs `holdfast demo` with any extra arguments, e.g. `npm run demo -- --only pause`.
// The demo's worker processes start from the build: plain node starts several times faster than tsx.
import { spawnSync } from 'node:child_process';
import process from 'node:process';
import { build } from 'tsup';

await build({
  config: false,
  entry: { 'cli/main': 'src/cli/main.ts' },
  format: ['esm'],
  target: 'node20',
  outDir: 'dist',
  sourcemap: true,
  clean: false,
  silent: true,
  banner: { js: '#!/usr/bin/env node' },
});
const result = spawnSync(process.execPath, ['dist/cli/main.js', 'demo', ...process.argv.slice(2)], { stdio: 'inherit' });
process.exit(result.status ?? 1);

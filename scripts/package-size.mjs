#!/usr/bin/env node
// Fails when the packed package unpacks to more than 1.1 MB (source maps with sources, or a CLI bundle that carries
// a second copy of the library, each pushed it past 2.5 MB once). Prints the size either way. About 60 % of the package
// is the library twice (ESM and CommonJS, each with its declarations, whose TSDoc is most of their size).
import { execFileSync } from 'node:child_process';

const LIMIT = 1_100_000;
const npm = process.platform === 'win32' ? 'npm.cmd' : 'npm';
const [report] = JSON.parse(execFileSync(npm, ['pack', '--dry-run', '--json', '--ignore-scripts'], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }));
const kB = (n) => `${(n / 1000).toFixed(1)} kB`;
console.log(`package: ${report.entryCount} files, ${kB(report.size)} packed, ${kB(report.unpackedSize)} unpacked (limit ${kB(LIMIT)})`);
if (report.unpackedSize > LIMIT) {
  for (const f of [...report.files].sort((a, b) => b.size - a.size).slice(0, 8)) console.log(`  ${kB(f.size).padStart(9)}  ${f.path}`);
  process.exit(1);
}

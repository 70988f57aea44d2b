#!/usr/bin/env node
// The package check, on what `npm pack` produces (its prepack builds, so a stale or missing dist cannot be shipped):
// - every entry point resolves with types in every module resolution (attw, on the tarball);
// - the tarball installed in a new app weighs at most 1.2 MB with everything it pulls in (holdfast and its
//   dependencies, as they land in node_modules);
// - no shipped .js/.cjs line is longer than 500 characters (Node prints the source line of an uncaught throw, and a
//   stack frame points into these files: both must stay readable);
// - the entry points' declarations type-check in that app, from ESM and from CommonJS, under `strict` without
//   `skipLibCheck`, with `types: []` (TypeScript 6+'s default: no @types package unless listed) and none of the
//   optional peers' types installed (@types/node-zookeeper-client among them);
// - without any optional peer installed, every entry point loads (ESM and CommonJS), and the scheduler says to install
//   croner when asked to parse a cron expression.
// Prints the figures either way; exits 1 on any failure.
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative, resolve } from 'node:path';
import { ENTRIES } from './entries.mjs';

const LIMIT = 1_200_000;
const MAX_LINE = 500;
const npm = process.platform === 'win32' ? 'npm.cmd' : 'npm';
const kB = (n) => `${(n / 1000).toFixed(1)} kB`;
const run = (cmd, args, cwd) => execFileSync(cmd, args, { cwd, encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'] });

function* files(dir) {
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) yield* files(path);
    else if (entry.isFile()) yield path;
  }
}
const bytes = (dir) => [...files(dir)].reduce((sum, f) => sum + statSync(f).size, 0);

const tmp = mkdtempSync(join(tmpdir(), 'holdfast-package-'));
let failed = false;
try {
  // prepack's build logs come first on stdout; npm's JSON report is the array that ends it
  const out = run(npm, ['pack', '--json', '--pack-destination', tmp]);
  const [report] = JSON.parse(out.slice(out.startsWith('[') ? 0 : out.lastIndexOf('\n[\n') + 1));
  const tarball = join(tmp, report.filename);
  console.log(`package: ${report.entryCount} files, ${kB(report.size)} packed, ${kB(report.unpackedSize)} unpacked`);

  try {
    execFileSync('npx', ['--no-install', 'attw', '--format', 'table-flipped', tarball], { stdio: 'inherit' });
  } catch {
    console.log('attw: the packed entry points do not resolve cleanly (its table is above)');
    failed = true;
  }

  const app = join(tmp, 'app');
  execFileSync('mkdir', ['-p', app]);
  writeFileSync(join(app, 'package.json'), '{ "name": "app", "private": true }\n');
  run(npm, ['install', '--no-audit', '--no-fund', '--ignore-scripts', '--no-package-lock', tarball], app);
  const modules = join(app, 'node_modules');
  const packages = readdirSync(modules).filter((n) => !n.startsWith('.'))
    .flatMap((n) => (n.startsWith('@') ? readdirSync(join(modules, n)).map((m) => `${n}/${m}`) : [n]));
  const sizes = packages.map((name) => ({ name, size: bytes(join(modules, name)) }));
  const total = sizes.reduce((sum, p) => sum + p.size, 0);
  console.log(`installed: ${kB(total)} in ${sizes.length} package(s) (limit ${kB(LIMIT)}): ${sizes.map((p) => `${p.name} ${kB(p.size)}`).join(', ')}`);
  if (total > LIMIT) {
    const root = join(modules, 'holdfast');
    for (const f of [...files(root)].map((f) => ({ f, size: statSync(f).size })).sort((a, b) => b.size - a.size).slice(0, 8)) {
      console.log(`  ${kB(f.size).padStart(9)}  ${relative(root, f.f)}`);
    }
    failed = true;
  }

  const root = join(modules, 'holdfast');
  let long = 0;
  for (const f of files(join(root, 'dist'))) {
    if (!/\.c?js$/.test(f)) continue;
    readFileSync(f, 'utf8').split('\n').forEach((line, i) => {
      if (line.length > MAX_LINE) {
        if (long++ < 10) console.log(`  ${relative(root, f)}:${i + 1} is ${line.length} characters long`);
      }
    });
  }
  console.log(`lines over ${MAX_LINE} characters in the shipped JavaScript: ${long}`);
  if (long > 0) failed = true;

  const transport = "{ kind: 'none', evalsha() {}, eval() {}, command() {}, createSubscriber() {} }";
  const probe = (load) => `${load}\nconst h = new Holdfast({ redis: ${transport} });\ntry { h.scheduler().schedule('j', '* * * * *', async () => {}); console.log('scheduled'); } catch (e) { console.log(e.message); }\nvoid h.close();\n`;
  // an entry point whose feature needs its peer (ZooKeeper, OpenTelemetry) may fail to load for that peer only
  const peers = [...new Set(ENTRIES.flatMap((entry) => (entry.peer === undefined ? [] : [entry.peer])))];
  const peerMissing = `/Cannot find (module|package) '(${peers.map((peer) => peer.replace(/[/]/g, '\\/')).join('|')})'/`;
  const others = JSON.stringify(ENTRIES.filter((entry) => entry.folder !== undefined).map((entry) => entry.specifier)).replace(/"/g, "'");
  const esm = probe(`import { Holdfast } from 'holdfast';\nfor (const e of ${others}) { try { await import(e); } catch (error) { if (!${peerMissing}.test(error.message)) throw error; } }`);
  const cjs = probe(`const { Holdfast } = require('holdfast');\nfor (const e of ${others}) { try { require(e); } catch (error) { if (!${peerMissing}.test(error.message)) throw error; } }`);
  for (const [name, code] of [['load.mjs', esm], ['load.cjs', cjs]]) {
    writeFileSync(join(app, name), code);
    let said = '';
    try {
      said = execFileSync(process.execPath, [name], { cwd: app, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] }).trim();
    } catch (error) {
      said = `failed: ${error.stderr.split('\n').slice(0, 6).join(' ')}`;
    }
    const ok = /npm install croner/.test(said);
    console.log(`without optional peers (${name}): ${ok ? 'every entry point loads; schedule() asks for croner' : said}`);
    if (!ok) failed = true;
  }

  // @types/node as a Node project has it (the repository's copy), and nothing else
  mkdirSync(join(modules, '@types'), { recursive: true });
  symlinkSync(resolve('node_modules/@types/node'), join(modules, '@types', 'node'), 'dir');
  // the entry points whose declarations need no optional peer's types (entries.json: peerTypes)
  const entries = ENTRIES.filter((entry) => !entry.peerTypes).map((entry) => entry.specifier);
  writeFileSync(join(app, 'check.mts'), entries.map((e, i) => `import * as m${i} from '${e}';\nconsole.log(m${i});\n`).join(''));
  writeFileSync(join(app, 'check.cts'), entries.map((e, i) => `import m${i} = require('${e}');\nconsole.log(m${i});\n`).join(''));
  const tsconfig = { compilerOptions: { strict: true, module: 'nodenext', moduleResolution: 'nodenext', target: 'es2022', skipLibCheck: false, noEmit: true, types: [] }, files: ['check.mts', 'check.cts'] };
  writeFileSync(join(app, 'tsconfig.json'), JSON.stringify(tsconfig));
  try {
    execFileSync(resolve('node_modules/.bin/tsc'), ['-p', app], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
    console.log(`types: ${entries.join(', ')} type-check from ESM and CommonJS (strict, types: [], no skipLibCheck)`);
  } catch (error) {
    console.log(`types: errors in a new app (strict, types: [], no skipLibCheck):\n${error.stdout}`);
    failed = true;
  }
} finally {
  rmSync(tmp, { recursive: true, force: true });
}
process.exit(failed ? 1 : 0);

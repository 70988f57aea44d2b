/**
 * The top self-time frames of a V8 `.cpuprofile` (from `node --cpu-prof`):
 *
 *   npx tsx bench/top-frames.ts <file.cpuprofile> [count=15] [--cycles N]
 *
 * `--cycles N` (the cycles the profiled run made) adds µs per cycle to every row, and a second table: self time per
 * package (a `node_modules` package, Node's own `node:` modules, the V8 entries in parentheses, or a source file).
 *
 * Under `node --import tsx` Node writes one profile per thread: `CPU.<date>.<time>.<pid>.0.<n>.cpuprofile` is the main
 * thread, `.1.` tsx's module-loader thread.
 *
 * Self time per frame is the sampled time of the nodes whose own code was running, merged over nodes with the same
 * function, url and line (one function reached along several call paths is one row). A frame in a script with a
 * source map beside it (dist/index.js.map) is named by its original source line (src/…/x.ts:n).
 */
import { existsSync, readFileSync } from 'node:fs';
import { SourceMap, type SourceMapPayload } from 'node:module';
import { dirname, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number; columnNumber: number };
  hitCount?: number;
}
interface Profile {
  nodes: ProfileNode[];
  samples?: number[];
  timeDeltas?: number[];
  startTime: number;
  endTime: number;
}

const args = process.argv.slice(2);
const cyclesAt = args.indexOf('--cycles');
const cycles = cyclesAt >= 0 ? Number(args.splice(cyclesAt, 2)[1]) : undefined;
const [file, countArg = '15', ...rest] = args;
const count = Number(countArg);
if (!file || !Number.isInteger(count) || rest.length > 0 || (cycles !== undefined && !(cycles > 0))) {
  console.error('usage: npx tsx bench/top-frames.ts <file.cpuprofile> [count=15] [--cycles N]');
  process.exit(2);
}
const profile = JSON.parse(readFileSync(file, 'utf8')) as Profile;

// Self time from the samples and their time deltas when present (exact), else from hit counts.
const selfUs = new Map<number, number>();
if (profile.samples && profile.timeDeltas) {
  profile.samples.forEach((id, i) => selfUs.set(id, (selfUs.get(id) ?? 0) + (profile.timeDeltas?.[i + 1] ?? 0)));
} else {
  const interval = (profile.endTime - profile.startTime) / Math.max(1, profile.nodes.reduce((a, n) => a + (n.hitCount ?? 0), 0));
  for (const n of profile.nodes) selfUs.set(n.id, (n.hitCount ?? 0) * interval);
}

const shortUrl = (url: string): string => {
  if (!url) return '';
  const path = url.startsWith('file://') ? new URL(url).pathname : url;
  const i = path.lastIndexOf('/node_modules/');
  return i >= 0 ? path.slice(i + '/node_modules/'.length) : path.startsWith('/') ? relative(process.cwd(), path) : path;
};

const maps = new Map<string, SourceMap | null>();
/** `src/x.ts:line` for a position in a file with a `.map` beside it, else undefined. */
function original(url: string, line: number, column: number): string | undefined {
  if (!url.startsWith('file://') || url.includes('/node_modules/')) return undefined;
  const path = fileURLToPath(url);
  let map = maps.get(path);
  if (map === undefined) {
    map = existsSync(`${path}.map`) ? new SourceMap(JSON.parse(readFileSync(`${path}.map`, 'utf8')) as SourceMapPayload) : null;
    maps.set(path, map);
  }
  const entry = map?.findEntry(line, column) as { originalSource?: string; originalLine?: number } | undefined;
  if (!entry?.originalSource || entry.originalLine === undefined) return undefined;
  const source = entry.originalSource.startsWith('file://') ? fileURLToPath(entry.originalSource) : resolve(dirname(path), entry.originalSource);
  return `${relative(process.cwd(), source)}:${entry.originalLine + 1}`;
}

const frames = new Map<string, { fn: string; where: string; us: number }>();
let total = 0;
for (const n of profile.nodes) {
  const us = selfUs.get(n.id) ?? 0;
  total += us;
  const { functionName, url, lineNumber, columnNumber } = n.callFrame;
  const where = url ? (original(url, lineNumber, columnNumber) ?? `${shortUrl(url)}:${lineNumber + 1}`) : '';
  const key = `${functionName}\u0000${where}`;
  const f = frames.get(key) ?? { fn: functionName || '(anonymous)', where, us: 0 };
  f.us += us;
  frames.set(key, f);
}
const top = [...frames.values()].sort((a, b) => b.us - a.us).slice(0, count);
console.log(`${file}: ${(total / 1e6).toFixed(2)} s sampled\n`);
// "% busy" leaves out (idle), the time the thread waited (here: for Redis' replies)
const busy = total - [...frames.values()].filter((f) => f.fn === '(idle)').reduce((a, f) => a + f.us, 0);
const perCycle = (us: number): string => (cycles === undefined ? '' : ` ${(us / cycles).toFixed(2)} |`);
console.log(`| % self | % busy | self ms |${cycles === undefined ? '' : ' µs/cycle |'} function | url:line |`);
console.log(`|---:|---:|---:|${cycles === undefined ? '' : '---:|'}---|---|`);
for (const f of top) {
  const ofBusy = f.fn === '(idle)' ? '' : ((f.us / busy) * 100).toFixed(1);
  console.log(`| ${((f.us / total) * 100).toFixed(1)} | ${ofBusy} | ${(f.us / 1000).toFixed(0)} |${perCycle(f.us)} ${f.fn} | ${f.where} |`);
}
if (cycles !== undefined) {
  /** The package of a frame: `@scope/name` or `name` under node_modules, `node:x`, `(v8 entry)`, or the file. */
  const packageOf = (f: { fn: string; where: string }): string => {
    if (!f.where) return f.fn.startsWith('(') ? f.fn : '(native)';
    const file = f.where.replace(/:\d+$/, '');
    if (file.startsWith('node:')) return file.split('/')[0]!;
    const parts = file.split('/');
    return file.includes('/') && !file.startsWith('.') && !file.startsWith('src/') && !file.startsWith('bench/') && !file.startsWith('results/')
      ? (parts[0]!.startsWith('@') ? parts.slice(0, 2) : parts.slice(0, 1)).join('/')
      : file;
  };
  const byPackage = new Map<string, number>();
  for (const f of frames.values()) byPackage.set(packageOf(f), (byPackage.get(packageOf(f)) ?? 0) + f.us);
  console.log(`\n| package or file | self ms | µs/cycle |\n|---|---:|---:|`);
  for (const [name, us] of [...byPackage].sort((a, b) => b[1] - a[1]).slice(0, count)) console.log(`| ${name} | ${(us / 1000).toFixed(0)} |${perCycle(us)}`);
}

/**
 * The top self-time frames of a V8 `.cpuprofile` (from `node --cpu-prof`):
 *
 *   npx tsx bench/top-frames.ts <file.cpuprofile> [count=15]
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

const [file, countArg = '15', ...rest] = process.argv.slice(2);
const count = Number(countArg);
if (!file || !Number.isInteger(count) || rest.length > 0) {
  console.error('usage: npx tsx bench/top-frames.ts <file.cpuprofile> [count=15]');
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
console.log('| % self | % busy | self ms | function | url:line |');
console.log('|---:|---:|---:|---|---|');
for (const f of top) {
  const ofBusy = f.fn === '(idle)' ? '' : ((f.us / busy) * 100).toFixed(1);
  console.log(`| ${((f.us / total) * 100).toFixed(1)} | ${ofBusy} | ${(f.us / 1000).toFixed(0)} | ${f.fn} | ${f.where} |`);
}

#!/usr/bin/env node
// No import circle in src/, type imports included: a module imports only modules on a floor below it, so a type that
// several floors need lives on a floor below all of them. Reads every src/**/*.ts (or the directory given as the first
// argument), takes each relative specifier of `import ... from`, `import type ... from`, `import '...'`,
// `export ... from` (`export type` too) and `import('...')` with a literal specifier (read by TypeScript's import
// scanner, so that comments and strings do not count), resolves it (`.js` → `.ts`, a
// directory → its index.ts), finds the strongly connected components of that graph (Tarjan) and prints each one of
// more than one file, or a file that imports itself. Exits 1 when there is any. Plain Node: no build, no new dependency.
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import ts from 'typescript';

const root = resolve(process.argv[2] ?? 'src');
const cwd = process.cwd();

function* walk(dir) {
  for (const entry of readdirSync(dir, { withFileTypes: true }).sort((a, b) => a.name.localeCompare(b.name))) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) yield* walk(path);
    else if (entry.isFile() && entry.name.endsWith('.ts')) yield path;
  }
}

/**
 * Every module specifier of a file: TypeScript's own import scanner (typescript is already a dev dependency; a regular
 * expression would take an import in a comment or a string for one, or miss `import('./x.js').T` in a type).
 */
function specifiers(text) {
  return ts.preProcessFile(text, true, true).importedFiles.map((file) => file.fileName);
}

function resolveSpecifier(from, specifier) {
  if (!specifier.startsWith('.')) return undefined;
  const base = resolve(dirname(from), specifier);
  const candidates = [base.replace(/\.(c|m)?js$/, '.$1ts'), base, `${base}.ts`, join(base, 'index.ts')];
  return candidates.find((c) => c.endsWith('.ts') && existsSync(c) && statSync(c).isFile());
}

/** Every file's imports within `dir`, by absolute path. */
export function graphOf(dir) {
  const graph = new Map();
  for (const file of walk(dir)) {
    const targets = specifiers(readFileSync(file, 'utf8'))
      .map((s) => resolveSpecifier(file, s))
      .filter((t) => t !== undefined && t.startsWith(dir + '/'));
    graph.set(file, [...new Set(targets)].sort());
  }
  return graph;
}

/** The circles: strongly connected components of more than one file, or of one file that imports itself. */
export function circlesOf(graph) {
  let index = 0;
  const indices = new Map();
  const low = new Map();
  const stack = [];
  const onStack = new Set();
  const circles = [];
  // Tarjan's algorithm, iterative (a deep import chain must not overflow the call stack)
  for (const start of graph.keys()) {
    if (indices.has(start)) continue;
    const work = [[start, 0]];
    indices.set(start, index);
    low.set(start, index++);
    stack.push(start);
    onStack.add(start);
    while (work.length > 0) {
      const frame = work[work.length - 1];
      const [node, i] = frame;
      const edges = graph.get(node) ?? [];
      if (i < edges.length) {
        frame[1]++;
        const next = edges[i];
        if (!indices.has(next)) {
          indices.set(next, index);
          low.set(next, index++);
          stack.push(next);
          onStack.add(next);
          work.push([next, 0]);
        } else if (onStack.has(next)) {
          low.set(node, Math.min(low.get(node), indices.get(next)));
        }
        continue;
      }
      work.pop();
      if (work.length > 0) {
        const parent = work[work.length - 1][0];
        low.set(parent, Math.min(low.get(parent), low.get(node)));
      }
      if (low.get(node) === indices.get(node)) {
        const component = [];
        let member;
        do {
          member = stack.pop();
          onStack.delete(member);
          component.push(member);
        } while (member !== node);
        if (component.length > 1 || edges.includes(node)) circles.push(component.sort());
      }
    }
  }
  return circles;
}

/** One import path around the circle, from its first file back to it: the edges to cut are among these. */
function pathAround(graph, component) {
  const inside = new Set(component);
  const start = component[0];
  // breadth-first from start's successors back to start, inside the component
  const previous = new Map();
  const queue = (graph.get(start) ?? []).filter((n) => inside.has(n));
  for (const n of queue) previous.set(n, start);
  while (queue.length > 0 && !previous.has(start)) {
    const node = queue.shift();
    for (const next of graph.get(node) ?? []) {
      if (!inside.has(next) || previous.has(next)) continue;
      previous.set(next, node);
      queue.push(next);
    }
  }
  const path = [start];
  for (let node = previous.get(start); node !== start && node !== undefined; node = previous.get(node)) path.unshift(node);
  path.unshift(start);
  return path;
}

const isMain = process.argv[1] !== undefined && resolve(process.argv[1]) === resolve(new URL(import.meta.url).pathname);
if (isMain) {
  if (!existsSync(root)) {
    console.error(`check-cycles: no directory ${root}`);
    process.exit(2);
  }
  const graph = graphOf(root);
  const circles = circlesOf(graph);
  const name = (file) => relative(cwd, file);
  if (circles.length === 0) {
    console.log(`check-cycles: ${graph.size} files under ${name(root) || '.'}, no import circle`);
    process.exit(0);
  }
  console.error(`check-cycles: ${circles.length} import circle(s) under ${name(root) || '.'} (type imports count too):`);
  for (const [i, circle] of circles.entries()) {
    console.error(`\ncircle ${i + 1}: ${circle.length} file(s)`);
    for (const file of circle) console.error(`  ${name(file)}`);
    console.error(`  for example: ${pathAround(graph, circle).map(name).join(' -> ')}`);
  }
  process.exit(1);
}

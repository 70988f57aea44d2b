/**
 * Reference tables that restate code are checked against the code, so they cannot drift from it. A table is marked
 * by an HTML comment on the line before it (invisible on GitHub and npm):
 *
 *     <!-- reference: options src/holdfast.ts HoldfastOptions -->   one row per member of that interface, with the
 *                                                                   `@default` of its TSDoc in the `default` column
 *     <!-- reference: errors -->       one row per error class holdfast exports, with its `code`
 *     <!-- reference: keys -->         one row per key or channel `src/keys.ts` builds, as `<prefix>{<name>}:…`
 *     <!-- reference: exit-codes -->   one row per exit code of the `holdfast` command (`src/cli/common.ts`)
 *
 * A row missing, a row too many, or a wrong value fails. The test also checks that every link between the pages
 * (and to an anchor in a page) resolves.
 */
import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { describe, it } from 'node:test';
import ts from 'typescript';
import { EXIT } from '../../src/cli/common.js';
import { HoldfastError } from '../../src/errors.js';
import * as holdfast from '../../src/index.js';
import * as zookeeper from '../../src/zookeeper/index.js';
import { Keys } from '../../src/keys.js';
import { ROOT } from '../support/cli.js';

/** README.md and docs/ (not the generated API reference), as the docs test reads them. */
function docFiles(): string[] {
  const walk = (dir: string): string[] =>
    readdirSync(dir)
      .sort()
      .flatMap((entry) => {
        const path = join(dir, entry);
        if (statSync(path).isDirectory()) return entry === 'api' ? [] : walk(path);
        return entry.endsWith('.md') ? [path] : [];
      });
  return [join(ROOT, 'README.md'), ...walk(join(ROOT, 'docs'))];
}

const REFERENCE = /^<!--\s*reference:\s*(.+?)\s*-->\s*$/;

interface Table {
  /** `docs/client.md:42` (the marker's line) */
  where: string;
  /** what the marker says after `reference:`, split on spaces */
  what: string[];
  header: string[];
  rows: string[][];
}

/** The cells of a markdown table row (a `|` inside backticks does not split). */
function cells(line: string): string[] {
  const out: string[] = [];
  let cell = '';
  let code = false;
  for (const ch of line.trim().replace(/^\|/, '').replace(/\|$/, '')) {
    if (ch === '`') code = !code;
    if (ch === '|' && !code) {
      out.push(cell.trim());
      cell = '';
    } else cell += ch;
  }
  out.push(cell.trim());
  return out;
}

/** Every marked table of README.md and docs/. */
function referenceTables(): Table[] {
  const tables: Table[] = [];
  for (const file of docFiles()) {
    const lines = readFileSync(file, 'utf8').split('\n');
    lines.forEach((line, i) => {
      const marker = REFERENCE.exec(line);
      if (!marker) return;
      const where = `${relative(ROOT, file)}:${i + 1}`;
      let k = i + 1;
      while (lines[k]?.trim() === '') k++;
      if (!lines[k]?.trim().startsWith('|')) throw new Error(`${where}: a reference marker must stand right before a table`);
      const header = cells(lines[k]!);
      const rows: string[][] = [];
      for (k += 2; lines[k]?.trim().startsWith('|'); k++) rows.push(cells(lines[k]!));
      tables.push({ where, what: marker[1]!.split(/\s+/), header, rows });
    });
  }
  return tables;
}

const tables = referenceTables();
const tablesOf = (kind: string) => tables.filter((t) => t.what[0] === kind);

/** A cell as plain text: no backticks, no bold, no quotes, lower case. */
const plain = (s: string) =>
  s
    .replace(/[`*"']/g, '')
    .replace(/\s+/g, ' ')
    .trim()
    .toLowerCase();

interface Member {
  name: string;
  optional: boolean;
  /** the text of the `@default` tag, if any */
  default: string | undefined;
}

/** The members of an exported interface, with their `@default`s, read from its TSDoc. */
function interfaceMembers(file: string, name: string): Member[] {
  const source = ts.createSourceFile(file, readFileSync(join(ROOT, file), 'utf8'), ts.ScriptTarget.Latest, true);
  const found = source.statements.find((s): s is ts.InterfaceDeclaration => ts.isInterfaceDeclaration(s) && s.name.text === name);
  if (!found) throw new Error(`${file} declares no interface ${name}`);
  return found.members.filter(ts.isPropertySignature).map((m) => {
    const tag = ts.getJSDocTags(m).find((t) => t.tagName.text === 'default');
    const comment = tag === undefined ? undefined : (ts.getTextOfJSDocComment(tag.comment) ?? '');
    return { name: m.name.getText(source), optional: m.questionToken !== undefined, default: comment };
  });
}

/**
 * What a table's default cell must start with, from a `@default`: its text up to a `:` or `(` that explains it
 * (`watchdogLease / 3 (10000)` → `watchdogLease / 3`). `undefined` reads as a dash, `none` or `off`.
 */
function defaultMatches(cell: string, tsdoc: string): boolean {
  const head = plain(tsdoc.split(/[:(]/)[0]!);
  const text = plain(cell);
  if (head === 'undefined' || head === 'none') return ['—', '-', 'none', 'off', 'undefined', 'no '].some((s) => text.startsWith(s));
  // `30000` must not pass for `300000`
  return text === head || (text.startsWith(head) && /^[^\p{L}\p{N}]/u.test(text.slice(head.length)));
}

describe('reference tables match the code', () => {
  it('has the tables the docs promise', () => {
    const kinds = tables.map((t) => `${t.what.join(' ')} @ ${t.where.split(':')[0]}`);
    for (const expected of [
      'options src/holdfast.ts HoldfastOptions @ docs/client.md',
      'errors @ docs/client.md',
      'keys @ docs/client.md',
      'exit-codes @ docs/cli.md',
    ]) {
      assert.ok(kinds.includes(expected), `no "<!-- reference: ${expected.split(' @ ')[0]} -->" table in ${expected.split(' @ ')[1]}`);
    }
  });

  for (const table of tablesOf('options')) {
    const [, file, name] = table.what;
    it(`${table.where}: the options of ${name} and their defaults`, () => {
      assert.ok(file && name, `${table.where}: say "options <source file> <interface>"`);
      const members = interfaceMembers(file, name);
      const column = table.header.findIndex((h) => plain(h) === 'default');
      assert.ok(column > 0, `${table.where}: the table needs a "default" column`);
      const documented = table.rows.map((r) => plain(r[0]!));
      assert.deepEqual([...documented].sort(), members.map((m) => m.name.toLowerCase()).sort(), `${table.where}: one row per option of ${name} (${file})`);
      for (const m of members) {
        const cell = table.rows.find((r) => plain(r[0]!) === m.name.toLowerCase())![column]!;
        if (m.default === undefined) {
          assert.ok(!m.optional, `${file}: ${name}.${m.name} is optional and has no @default`);
          assert.match(plain(cell), /required/, `${table.where}: ${m.name} is required`);
        } else {
          assert.ok(defaultMatches(cell, m.default), `${table.where}: the default of ${m.name} reads "${cell}", the code says @default ${m.default}`);
        }
      }
    });
  }

  it('the error table lists every exported error class with its code', () => {
    // the classes both entry points export, and each one's code from the `super('CODE', …)` of its constructor
    const source = readFileSync(join(ROOT, 'src/errors.ts'), 'utf8');
    // (a subclass of another error sets its own: `override readonly code: HoldfastErrorCode = 'CODE'`)
    const codeOf = new Map([...source.matchAll(/export class (\w+) extends (?:HoldfastError[\s\S]*?super\(\s*'([A-Z_]+)'|\w+Error \{\s*override readonly code: HoldfastErrorCode = '([A-Z_]+)')/g)].map((m) => [m[1]!, (m[2] ?? m[3])!]));
    const exported = new Set(
      [...Object.entries(holdfast), ...Object.entries(zookeeper)]
        .filter(([, v]) => typeof v === 'function' && v.prototype instanceof HoldfastError)
        .map(([k]) => k),
    );
    assert.ok(exported.size >= 10, 'the error classes were found');
    for (const table of tablesOf('errors')) {
      const rows = new Map(table.rows.map((r) => [r[0]!.replace(/`/g, ''), r[1]!.replace(/`/g, '')]));
      assert.deepEqual([...rows.keys()].sort(), [...exported].sort(), `${table.where}: one row per error class`);
      for (const [cls, code] of rows) assert.equal(code, codeOf.get(cls), `${table.where}: the code of ${cls}`);
    }
  });

  it('the key table lists every key and channel src/keys.ts builds', () => {
    // every method of Keys that names a key, called with placeholders: `<prefix>{<name>}:lock`, …
    const keys = new Keys('<prefix>');
    const second: Record<string, string> = { releaseMarker: '<id>', fairChannel: '<client>' };
    const skip = new Set(['constructor', 'base', 'nameOf', 'legacyFence']);
    const expected = new Map<string, string>();
    for (const method of Object.getOwnPropertyNames(Keys.prototype)) {
      if (skip.has(method)) continue;
      const fn = (keys as unknown as Record<string, (...a: string[]) => string>)[method]!;
      let key = fn.call(keys, '<name>', second[method] ?? '<i>');
      // the fencing counter is one per slot, named by a tag chosen for that slot
      if (method === 'fence') key = key.replace(/^<prefix>\{[0-9a-z]+\}:fence$/, '<prefix>{<t>}:fence');
      expected.set(key, method);
    }
    assert.ok(expected.has('<prefix>{<t>}:fence'), 'the fence key is per slot');
    for (const table of tablesOf('keys')) {
      const documented = table.rows.map((r) => r[0]!.replace(/`/g, ''));
      const missing = [...expected.keys()].filter((k) => !documented.includes(k));
      const extra = documented.filter((k) => !expected.has(k));
      assert.deepEqual({ missing, extra }, { missing: [], extra: [] }, `${table.where}: one row per key`);
    }
  });

  it('the exit-code table lists every exit code of the holdfast command', () => {
    const codes = Object.values(EXIT).map(String).sort();
    for (const table of tablesOf('exit-codes')) {
      // a row may give two codes ("126 / 127"); rows without a number (the command's own code) are prose
      const documented = table.rows.flatMap((r) => r[0]!.match(/\d+/g) ?? []).sort();
      assert.deepEqual(documented, codes, `${table.where}: one row per code of EXIT in src/cli/common.ts`);
    }
  });
});

/** GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens. */
function slug(heading: string): string {
  return heading
    .trim()
    .toLowerCase()
    .replace(/[^\p{L}\p{N}\s_-]/gu, '')
    .replace(/\s/g, '-');
}

function anchors(file: string): Set<string> {
  const seen = new Map<string, number>();
  const out = new Set<string>();
  let fence = false;
  for (const line of readFileSync(file, 'utf8').split('\n')) {
    if (/^```/.test(line)) fence = !fence;
    const h = !fence && /^#{1,6}\s+(.*)$/.exec(line);
    if (!h) continue;
    const base = slug(h[1]!);
    const n = seen.get(base) ?? 0;
    seen.set(base, n + 1);
    out.add(n === 0 ? base : `${base}-${n}`);
  }
  return out;
}

describe('links between the pages', () => {
  for (const file of docFiles()) {
    it(`${relative(ROOT, file)}: every relative link resolves`, () => {
      const broken: string[] = [];
      let fence = false;
      readFileSync(file, 'utf8')
        .split('\n')
        .forEach((line, i) => {
          if (/^```/.test(line)) fence = !fence;
          if (fence) return;
          for (const m of line.replace(/`[^`]*`/g, '').matchAll(/\]\(([^)\s]+)\)/g)) {
            const target = m[1]!;
            if (/^[a-z]+:/i.test(target)) continue; // https:, mailto:
            const [path, anchor] = target.split('#') as [string, string | undefined];
            const resolved = path === '' ? file : resolve(dirname(file), path);
            if (!existsSync(resolved)) broken.push(`line ${i + 1}: ${target} (no such file)`);
            else if (anchor !== undefined && resolved.endsWith('.md') && !anchors(resolved).has(anchor)) {
              broken.push(`line ${i + 1}: ${target} (no heading "#${anchor}" in ${relative(ROOT, resolved)})`);
            }
          }
        });
      assert.deepEqual(broken, []);
    });
  }
});

/**
 * scripts/check-cycles.mjs (part of `npm run lint`): no import circle in src/, type imports included. On the tree it
 * passes; on a small fixture with circles (a type import, an `export ... from`, a dynamic `import()`, a directory
 * index, a `.js` specifier of a `.ts` file) it fails and names every file of each circle, and nothing outside them.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { ROOT } from '../support/cli.js';

const SCRIPT = join(ROOT, 'scripts', 'check-cycles.mjs');

function check(dir?: string) {
  return spawnSync(process.execPath, dir === undefined ? [SCRIPT] : [SCRIPT, dir], { cwd: ROOT, encoding: 'utf8', timeout: 30_000 });
}

describe('scripts/check-cycles.mjs', () => {
  let fixture: string;
  const write = (path: string, text: string) => {
    mkdirSync(dirname(join(fixture, path)), { recursive: true });
    writeFileSync(join(fixture, path), text);
  };
  before(() => {
    fixture = mkdtempSync(join(tmpdir(), 'holdfast-cycles-'));
    // circle 1: a value import one way, a type-only import back
    write('a.ts', "import { b } from './b.js';\nexport const a = () => b;\n");
    write('b.ts', "import type { A } from './c.js';\nexport const b = 1;\nexport type B = A;\n");
    write('c.ts', "export type { a as A } from './a.js';\n");
    // circle 2: through a directory index and a dynamic import()
    write('d.ts', "export * from './sub';\n");
    write('sub/index.ts', "export const load = () => import('../d.js');\n");
    // no circle: imports of the circles' files, a package, a comment and a string that only look like imports
    write('leaf.ts', "import { a } from './a.js';\nimport { join } from 'node:path';\n// import { x } from './leaf.js';\nexport const s = \"import './leaf.js'\";\nexport const l = () => [a, join];\n");
  });
  after(() => rmSync(fixture, { recursive: true, force: true }));

  it('passes on src/: no import circle, type imports included', () => {
    const r = check();
    assert.equal(r.status, 0, r.stderr);
    assert.match(r.stdout, /no import circle/);
  });

  it('fails on a circle and names each file of it, type imports, re-exports, import() and directory indexes included', () => {
    const r = check(fixture);
    assert.equal(r.status, 1, r.stdout);
    const circles = r.stderr.split(/\ncircle \d+: /).slice(1).map((block) => block.split('\n').filter((line) => /^ {2}\S/.test(line)).map((line) => line.trim()).filter((line) => !line.startsWith('for example')));
    const names = (files: string[]) => files.map((file) => file.slice(fixture.length + 1)).sort();
    const relative = circles.map((files) => names(files.map((file) => join(ROOT, file))));
    assert.deepEqual(relative.sort((x, y) => x[0]!.localeCompare(y[0]!)), [['a.ts', 'b.ts', 'c.ts'], ['d.ts', 'sub/index.ts']], r.stderr);
    assert.match(r.stderr, /2 import circle\(s\)/);
    assert.doesNotMatch(r.stderr, /leaf\.ts/);
  });
});

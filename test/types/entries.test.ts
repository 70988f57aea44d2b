/**
 * The entry points are listed once, in entries.json (read through scripts/entries.mjs by tsup.config.ts,
 * scripts/esm-entries.mjs, typedoc.config.mjs, scripts/package-size.mjs and test/types/public-api.test.ts).
 * package.json cannot read it, so it is checked here: its `exports` and `files`, and the folders old resolvers read
 * (`<subpath>/package.json`, which `npm run build` writes from the list), must agree with the list exactly. Adding an
 * entry: one line in entries.json, its `exports` and `files` in package.json, then `npm run build` (writes its folder).
 */
import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { ENTRIES } from '../../scripts/entries.mjs';
import { ROOT } from '../support/cli.js';

interface PackageJson {
  exports: Record<string, unknown>;
  files: string[];
  main: string;
  module: string;
  types: string;
}

const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as PackageJson;
const root = ENTRIES.find((entry) => entry.subpath === '.');

describe('entries.json, the one list of entry points', () => {
  it('each entry has a source file, and no subpath, source or built name twice', () => {
    for (const entry of ENTRIES) {
      assert.ok(existsSync(join(ROOT, entry.source)), `${entry.source} exists`);
      assert.match(entry.subpath, /^\.(\/[a-z][a-z0-9-]*)?$/, entry.subpath);
    }
    for (const key of ['subpath', 'source', 'out'] as const) {
      const values = ENTRIES.map((entry) => entry[key]);
      assert.deepEqual(values, [...new Set(values)], `no ${key} twice`);
    }
    assert.ok(root, 'the root entry (subpath ".") is listed');
  });

  it('package.json `exports` is the list (in its order), plus ./package.json', () => {
    const expected: Record<string, unknown> = {};
    for (const entry of ENTRIES) {
      expected[entry.subpath] = entry.exports;
      if (entry.subpath === '.') expected['./package.json'] = './package.json';
    }
    assert.deepEqual(Object.keys(pkg.exports), Object.keys(expected), 'the subpaths of package.json `exports`, in the order of entries.json');
    assert.deepEqual(pkg.exports, expected, 'package.json `exports` (each subpath: import/require → dist/<built name>.{d.ts,js,d.cts,cjs})');
  });

  it('package.json main/module/types are the root entry', () => {
    assert.ok(root);
    assert.deepEqual(
      { main: pkg.main, module: pkg.module, types: pkg.types },
      { main: root.exports.require.default, module: root.exports.import.default, types: root.exports.import.types },
    );
  });

  it('package.json `files` ships exactly the folder of each subpath (for resolvers without `exports`)', () => {
    const folders = pkg.files.filter((file) => file.endsWith('/package.json')).map((file) => file.slice(0, -'/package.json'.length));
    const expected = ENTRIES.flatMap((entry) => (entry.folder === undefined ? [] : [entry.folder]));
    assert.deepEqual(folders, expected, 'package.json `files`: <folder>/package.json for each subpath, in the order of entries.json');
  });

  it('each subpath folder holds the package.json derived from the list, and no other folder is one', () => {
    for (const entry of ENTRIES) {
      if (entry.folder === undefined) continue;
      const path = join(ROOT, entry.folder, 'package.json');
      assert.ok(existsSync(path), `${entry.folder}/package.json exists (npm run build writes it)`);
      assert.deepEqual(JSON.parse(readFileSync(path, 'utf8')), entry.folderPackage, `${entry.folder}/package.json`);
    }
    // a folder left behind by a removed entry: a top-level package.json pointing into dist/
    const strays = readdirSync(ROOT, { withFileTypes: true })
      .filter((dirent) => dirent.isDirectory() && existsSync(join(ROOT, dirent.name, 'package.json')))
      .filter((dirent) => /"\.\.\/dist\//.test(readFileSync(join(ROOT, dirent.name, 'package.json'), 'utf8')))
      .map((dirent) => dirent.name)
      .filter((name) => !ENTRIES.some((entry) => entry.folder === name));
    assert.deepEqual(strays, [], 'subpath folders of no entry');
  });
});

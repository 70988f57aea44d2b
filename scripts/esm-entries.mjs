#!/usr/bin/env node
// After tsup: the ESM entry points. The library is built once, as CommonJS (dist/**/*.cjs); each ESM entry
// (dist/<entry>.js) imports that file and re-exports its names, and each ESM declaration file (dist/<entry>.d.ts)
// re-exports the CommonJS declarations. One copy of the code serves `import` and `require` alike: the package weighs
// half as much, and a program that loads holdfast both ways (an ESM app with a CommonJS dependency that uses it) gets
// one copy of each class, so `instanceof LockLostError` and the diagnostics channels are the same on both sides.
// Also writes the package.json of each subpath's folder (`zookeeper/package.json`, …), which resolvers that do not
// read `exports` use. The entries are those of entries.json (see scripts/entries.mjs).
import { mkdirSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { resolve } from 'node:path';
import { ENTRIES } from './entries.mjs';

const require = createRequire(import.meta.url);
const IDENTIFIER = /^[A-Za-z_$][\w$]*$/;

for (const { out: entry, folder, folderPackage } of ENTRIES) {
  // the folder old resolvers (no `exports`) read: derived from the list, checked by test/types/entries.test.ts
  if (folder !== undefined) {
    mkdirSync(folder, { recursive: true });
    writeFileSync(`${folder}/package.json`, JSON.stringify(folderPackage, null, 2) + '\n');
  }
  const base = `./${entry.slice(entry.lastIndexOf('/') + 1)}.cjs`;
  const names = Object.keys(require(resolve('dist', `${entry}.cjs`))).filter((name) => name !== 'default' && name !== '__esModule').sort();
  const bad = names.filter((name) => !IDENTIFIER.test(name));
  if (bad.length > 0) throw new Error(`dist/${entry}.cjs exports names an ESM re-export cannot spell: ${bad.join(', ')}`);
  // createRequire rather than `import cjs from`: a CommonJS file that throws while loading (an entry whose optional peer
  // is missing) then rejects the import() as any ESM module would, where Node's CommonJS translator also reports it
  // as uncaught
  const lines = [
    `// The ESM entry of dist/${entry}.cjs (see scripts/esm-entries.mjs).`,
    `import { createRequire } from 'node:module';`,
    '',
    `const cjs = createRequire(import.meta.url)('${base}');`,
    '',
  ];
  for (const name of names) lines.push(`export const ${name} = cjs.${name};`);
  writeFileSync(resolve('dist', `${entry}.js`), lines.join('\n') + '\n');
  writeFileSync(resolve('dist', `${entry}.d.ts`), `export * from '${base}';\n`);
}
console.log(`ESM entries: ${ENTRIES.length} re-exports of the CommonJS build`);

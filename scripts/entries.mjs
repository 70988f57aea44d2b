// The package's entry points, read from entries.json (the one list of them) with what each consumer derives from an
// entry: its built name under dist/, its import specifier, its package.json `exports` condition map and the
// package.json of the folder that old resolvers (TypeScript's `node10`, bundlers without `exports`) read.
import { readFileSync } from 'node:fs';

const list = JSON.parse(readFileSync(new URL('../entries.json', import.meta.url), 'utf8'));

/** @type {readonly import('./entries.d.mts').Entry[]} */
export const ENTRIES = list.entries.map((entry) => {
  const out = entry.source.replace(/^src\//, '').replace(/\.ts$/, '');
  const folder = entry.subpath === '.' ? undefined : entry.subpath.slice(2);
  return {
    subpath: entry.subpath,
    source: entry.source,
    docs: entry.docs === true,
    peer: entry.peer,
    peerTypes: entry.peerTypes === true,
    out,
    specifier: folder === undefined ? 'holdfast' : `holdfast/${folder}`,
    folder,
    exports: {
      import: { types: `./dist/${out}.d.ts`, default: `./dist/${out}.js` },
      require: { types: `./dist/${out}.d.cts`, default: `./dist/${out}.cjs` },
    },
    folderPackage: folder === undefined ? undefined : { private: true, main: `../dist/${out}.cjs`, module: `../dist/${out}.js`, types: `../dist/${out}.d.cts` },
  };
});

import { resolve } from 'node:path';
import type { Plugin } from 'esbuild';
import { defineConfig } from 'tsup';
import { ENTRIES as ENTRY_LIST } from './scripts/entries.mjs';

const SRC = resolve('src');
const CLI = resolve('src/cli');

/**
 * The CLI reaches the library only through `src/index.ts`, and that import stays an import of the built entry
 * (`dist/cli/main.js` → `../index.js`; the demo's in-process backend, `src/memory/index.ts`, likewise → `../memory/index.js`)
 * instead of a second copy of the library inside the CLI bundle. Any other
 * import from the CLI into the library's sources is a build error, so a copy cannot creep back in.
 */
const libraryFromBuiltEntry: Plugin = {
  name: 'cli-imports-built-library',
  setup(build) {
    build.onResolve({ filter: /^\.\.?\// }, (args) => {
      const target = resolve(args.resolveDir, args.path).replace(/\.js$/, '.ts');
      if (target === resolve(SRC, 'index.ts')) return { path: '../index.js', external: true };
      if (target === resolve(SRC, 'memory/index.ts')) return { path: '../memory/index.js', external: true };
      if (target.startsWith(SRC + '/') && !target.startsWith(CLI + '/')) {
        return { errors: [{ text: `${args.importer}: the CLI must import the library through src/index.ts, not ${args.path}` }] };
      }
      return undefined;
    });
  },
};

/** Every entry point (entries.json): built name under dist/ → source. */
const ENTRIES = Object.fromEntries(ENTRY_LIST.map((entry) => [entry.out, entry.source]));

// Not minified: Node prints the source line of an uncaught throw and stack frames point into these files, so they stay
// readable (scripts/package-size.mjs fails on any line over 500 characters).
//
// The library is built once, as CommonJS; scripts/esm-entries.mjs then writes each ESM entry (dist/<entry>.js) and its
// declaration file as re-exports of it (see there why).
export default defineConfig([
  {
    // CommonJS, one file per entry (tsup's CommonJS splitting would rewrite every `?.` and `??` into helper calls, a
    // cost on the hot path).
    entry: ENTRIES,
    format: ['cjs'],
    // The declarations are written once, here (each entry's ESM declaration file re-exports them),
    // without @internal members. They use Node's types (EventEmitter, AbortSignal, Symbol.asyncDispose) and say so,
    // for projects whose `types` does not list node (TypeScript 6+ includes no @types package by default).
    dts: { compilerOptions: { stripInternal: true }, banner: '/// <reference types="node" />' },
    sourcemap: false,
    clean: true,
    target: 'node20',
    splitting: false,
    // import.meta.url (the scheduler loads croner relative to holdfast) from __filename
    shims: true,
  },
  {
    entry: { 'cli/main': 'src/cli/main.ts' },
    format: ['esm'],
    dts: false,
    sourcemap: false,
    target: 'node20',
    banner: { js: '#!/usr/bin/env node' },
    esbuildPlugins: [libraryFromBuiltEntry],
  },
]);

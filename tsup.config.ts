import { resolve } from 'node:path';
import type { Plugin } from 'esbuild';
import { defineConfig } from 'tsup';

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

const LIBRARY = {
  index: 'src/index.ts',
  'zookeeper/index': 'src/zookeeper/index.ts',
  'integrations/node-cron': 'src/integrations/node-cron.ts',
  'integrations/cron': 'src/integrations/cron.ts',
  'integrations/nestjs': 'src/integrations/nestjs.ts',
  'otel/index': 'src/otel/index.ts',
};

export default defineConfig([
  {
    entry: LIBRARY,
    format: ['esm', 'cjs'],
    // holdfast/memory's declarations come from here too: a block's declaration step first deletes every .d.ts of
    // the output folder, so a second block's would race with it
    dts: { entry: { ...LIBRARY, 'memory/index': 'src/memory/index.ts' } },
    sourcemap: false,
    // whitespace and syntax only: names stay as written, so stack traces still read (no keepNames: without renaming it
    // only wraps every function in a __name() call, which costs a property definition per closure on the hot path)
    minifyWhitespace: true,
    minifySyntax: true,
    clean: true,
    target: 'node20',
    splitting: false,
  },
  {
    // holdfast/memory, the optional in-process backend, fully minified (local names too): it is for tests, and this
    // keeps the package within its size budget (scripts/package-size.mjs). Its errors still carry Redis' messages.
    entry: { 'memory/index': 'src/memory/index.ts' },
    format: ['esm', 'cjs'],
    dts: false,
    sourcemap: false,
    minify: true,
    target: 'node20',
    splitting: false,
  },
  {
    entry: { 'cli/main': 'src/cli/main.ts' },
    format: ['esm'],
    dts: false,
    sourcemap: false,
    minifyWhitespace: true,
    minifySyntax: true,
    target: 'node20',
    banner: { js: '#!/usr/bin/env node' },
    esbuildPlugins: [libraryFromBuiltEntry],
  },
]);

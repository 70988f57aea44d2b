import { defineConfig } from 'tsup';

export default defineConfig([
  {
    entry: {
      index: 'src/index.ts',
      'zookeeper/index': 'src/zookeeper/index.ts',
      'integrations/node-cron': 'src/integrations/node-cron.ts',
      'integrations/cron': 'src/integrations/cron.ts',
      'integrations/nestjs': 'src/integrations/nestjs.ts',
      'otel/index': 'src/otel/index.ts',
    },
    format: ['esm', 'cjs'],
    dts: true,
    sourcemap: true,
    clean: true,
    target: 'node20',
    splitting: false,
  },
  {
    entry: { 'cli/main': 'src/cli/main.ts' },
    format: ['esm'],
    dts: false,
    sourcemap: true,
    target: 'node20',
    banner: { js: '#!/usr/bin/env node' },
  },
]);

/**
 * An uncaught holdfast error, as Node prints it (the source line of the throw, the message, a short stack), stays
 * short and points at readable code: the shipped JavaScript is not minified. Runs the built package (`dist/`).
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { after, before, describe, it } from 'node:test';
import { ensureBuilt, ROOT } from '../support/cli.js';
import { RedisServer } from '../support/redis-server.js';

describe('an uncaught AcquireTimeoutError from the built package', () => {
  let server: RedisServer;
  before(async () => {
    await ensureBuilt();
    server = await RedisServer.start();
  });
  after(async () => {
    await server.stop();
  });

  for (const format of ['esm', 'cjs'] as const) {
    it(`prints its message and a short stack, under 5 KB (${format})`, () => {
      const body = [
        `const redis = new Redis(${JSON.stringify(server.url)});`,
        'const hf = new Holdfast({ redis });',
        // a name per run: the process dies holding its first lock (until its lease runs out)
        `hf.lock('u-${format}').acquire().then(() => hf.lock('u-${format}').acquire({ timeout: 200 })).then(() => process.exit(0));`,
      ].join('\n');
      const code =
        format === 'esm'
          ? `import { Redis } from 'ioredis';\nimport { Holdfast } from 'holdfast';\n${body}`
          : `const { Redis } = require('ioredis');\nconst { Holdfast } = require('holdfast');\n${body}`;
      const r = spawnSync(process.execPath, [format === 'esm' ? '--input-type=module' : '--input-type=commonjs', '-e', code], { cwd: ROOT, encoding: 'utf8', timeout: 30_000 });
      assert.equal(r.status, 1, r.stderr);
      assert.match(r.stderr, new RegExp(`AcquireTimeoutError: timed out after 200 ms waiting for "u-${format}"`));
      assert.ok(Buffer.byteLength(r.stderr) < 5000, `${Buffer.byteLength(r.stderr)} bytes on stderr:\n${r.stderr.slice(0, 2000)}`);
      // the frames point into dist/ at a readable line, not column 30000 of one long line
      const frame = /dist\/index\.c?js:(\d+):(\d+)/.exec(r.stderr);
      assert.ok(frame, r.stderr);
      assert.ok(Number(frame[2]) < 500, frame[0]);
    });
  }
});

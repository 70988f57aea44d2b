/**
 * RESP2 and RESP3, explicitly. The default run speaks RESP3 with every client (pinned in test/support/clients.ts); this
 * file checks that each adapter's connection speaks the protocol asked for (the server's own `CLIENT INFO`), and runs
 * the whole lock suite (test/primitives/lock.test.ts, every adapter) once more over RESP2, in a child process.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { allAdapters } from '../support/clients.js';
import { runSuite } from '../support/child-suite.js';

/** The adapters that speak RESP to a server (the in-process backend has no protocol between holdfast and its store; PostgreSQL is no Redis). */
const serverAdapters = allAdapters.filter((a) => !a.inProcess && !a.postgres);
import { RedisServer } from '../support/redis-server.js';

const ROOT = join(import.meta.dirname, '..', '..');


void describe('each adapter speaks the RESP version it is given', () => {
  let server: RedisServer;
  before(async () => {
    server = await RedisServer.start();
  });
  after(async () => {
    await server.stop();
  });

  for (const resp of [2, 3] as const) {
    void it(`HOLDFAST_RESP=${resp}: CLIENT INFO says resp=${resp} for ioredis, node-redis and GLIDE`, async () => {
      const script = [
        `const { allAdapters } = await import(${JSON.stringify(join(ROOT, 'test/support/clients.ts'))});`,
        `const { toTransport } = await import(${JSON.stringify(join(ROOT, 'src/index.ts'))});`,
        'const out = {};',
        'for (const adapter of allAdapters.filter((a) => !a.inProcess && !a.postgres)) {',
        `  const client = await adapter.connect(${JSON.stringify(server.url)});`,
        "  const info = String(await toTransport(client).command(['CLIENT', 'INFO']));",
        '  out[adapter.name] = /\\bresp=(\\d)/.exec(info)?.[1];',
        '  await adapter.disconnect(client);',
        '}',
        'process.stdout.write(JSON.stringify(out));',
        'process.exit(0);',
      ].join('\n');
      const child = spawn(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], {
        cwd: ROOT,
        env: { ...process.env, HOLDFAST_RESP: String(resp) },
        stdio: ['ignore', 'pipe', 'inherit'],
      });
      let out = '';
      child.stdout.on('data', (c: Buffer) => (out += c.toString()));
      const code = await new Promise((r) => child.on('exit', r));
      assert.equal(code, 0);
      const expected = Object.fromEntries(serverAdapters.map((a) => [a.name, String(resp)]));
      assert.deepEqual(JSON.parse(out.trim().split('\n').pop() ?? '{}'), expected);
    });
  }
});

void it('the lock suite passes over RESP2 with every adapter', async (t) => {
  // every adapter that speaks RESP, and the in-process backend (PostgreSQL speaks no RESP)
  const result = await runSuite('test/primitives/lock.test.ts', { HOLDFAST_RESP: '2', HOLDFAST_ADAPTERS: allAdapters.filter((a) => !a.postgres).map((a) => a.name).join(',') });
  t.diagnostic(`RESP2 lock suite: ${result.pass} passed, ${result.fail} failed`);
  if (result.code !== 0 || result.fail !== 0) process.stderr.write(result.output);
  assert.equal(result.code, 0);
  assert.equal(result.fail, 0);
  // each adapter's suite ran and passed
  for (const adapter of serverAdapters) assert.match(result.output, new RegExp(`^ok \\d+ - Lock \\(${adapter.name}\\)$`, 'm'), adapter.name);
});

 
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { Redis } from 'ioredis';
import { Holdfast } from '../../src/index.js';
import { ensureBuilt, run } from '../support/cli.js';
import { rawCommand, RedisServer } from '../support/redis-server.js';

const VIEW_KEYS = ['name', 'kind', 'held', 'owner', 'holdCount', 'token', 'remainingTtl', 'lastToken', 'waiters'].sort();

describe('holdfast inspect / list / unlock (built CLI, real Redis)', { timeout: 60_000 }, () => {
  let server: RedisServer;
  let redis: Redis;
  let holdfast: Holdfast;
  let env: NodeJS.ProcessEnv;

  before(async () => {
    await ensureBuilt();
    // a password-protected server: the CLI gets the password from the environment only
    server = await RedisServer.start();
    assert.equal(await rawCommand(server.port, 'CONFIG SET requirepass s3cret'), '+OK');
    redis = new Redis(server.url, { password: 's3cret', maxRetriesPerRequest: 1 });
    holdfast = new Holdfast({ redis, prefix: 'app:' });
    env = { REDIS_URL: server.url, REDISCLI_AUTH: 's3cret' };
  });
  after(async () => {
    await holdfast.close();
    redis.disconnect();
    await server.stop();
  });

  it('inspect shows owner, hold count, TTL and token, as a table and as JSON', async () => {
    const held = await holdfast.lock('orders:42').acquire({ lease: 20_000 });
    const again = await holdfast.lock('orders:42').acquire({ owner: held.owner, lease: 20_000 });
    try {
      const text = await run(['inspect', '--prefix', 'app:', 'orders:42'], env);
      assert.equal(text.code, 0, text.stderr);
      const [header, row] = text.stdout.trim().split('\n');
      assert.match(header!, /^NAME\s+KIND\s+OWNER\s+HOLDS\s+TTL\s+TOKEN\s+LAST TOKEN\s+WAITERS$/);
      assert.ok(row!.startsWith('orders:42'), row);
      assert.ok(row!.includes(held.owner), row);

      const json = await run(['inspect', '--prefix', 'app:', '--json', 'orders:42'], env);
      const view = JSON.parse(json.stdout) as Record<string, unknown>;
      assert.deepEqual(Object.keys(view).sort(), VIEW_KEYS);
      assert.equal(view.held, true);
      assert.equal(view.kind, 'lock');
      assert.equal(view.owner, held.owner);
      assert.equal(view.holdCount, 2);
      assert.equal(view.token, held.token);
      assert.equal(view.lastToken, held.token);
      assert.equal(view.waiters, null);
      assert.ok(typeof view.remainingTtl === 'number' && view.remainingTtl > 0 && view.remainingTtl <= 20_000, String(view.remainingTtl));
    } finally {
      await again.release();
      await held.release();
    }
    const free = await run(['inspect', '--prefix', 'app:', 'orders:42'], env);
    assert.equal(free.stdout.trim(), `"orders:42" is free (last token ${(await holdfast.lock('orders:42').inspect()).lastToken})`);
    const freeJson = JSON.parse((await run(['inspect', '--prefix', 'app:', '--json', 'orders:42'], env)).stdout) as Record<string, unknown>;
    assert.equal(freeJson.held, false);
    assert.equal(freeJson.owner, null);
    assert.equal(freeJson.remainingTtl, null);
  });

  it('list finds held locks by SCAN, filters with --match, and stays inside --prefix', async () => {
    const a = await holdfast.lock('orders:1').acquire();
    const b = await holdfast.lock('orders:2').acquire();
    const c = await holdfast.lock('users:7').acquire();
    const other = new Holdfast({ redis, prefix: 'other:' });
    const d = await other.lock('orders:3').acquire();
    try {
      const all = JSON.parse((await run(['list', '--prefix', 'app:', '--json'], env)).stdout) as { name: string; held: boolean }[];
      assert.deepEqual(all.map((v) => v.name).sort(), ['orders:1', 'orders:2', 'users:7']);
      assert.ok(all.every((v) => v.held));
      const orders = JSON.parse((await run(['list', '--prefix', 'app:', '--match', 'orders:*', '--json'], env)).stdout) as { name: string }[];
      assert.deepEqual(orders.map((v) => v.name), ['orders:1', 'orders:2']);
      const text = await run(['list', '--prefix', 'app:'], env);
      assert.equal(text.stdout.trim().split('\n').length, 4, text.stdout);
      const none = await run(['list', '--prefix', 'nothing-here:'], env);
      assert.equal(none.stdout.trim(), 'no locks held');
    } finally {
      await Promise.all([a.release(), b.release(), c.release(), d.release()]);
      await other.close();
    }
  });

  it('unlock needs --force, deletes whoever holds the lock, and exits 1 when there was none', async () => {
    const held = await holdfast.lock('stuck').acquire();
    const refused = await run(['unlock', '--prefix', 'app:', 'stuck'], env);
    assert.equal(refused.code, 64);
    assert.equal(await holdfast.lock('stuck').isLocked(), true);

    const done = await run(['unlock', '--prefix', 'app:', '--force', '--json', 'stuck'], env);
    assert.equal(done.code, 0, done.stderr);
    const reply = JSON.parse(done.stdout) as { name: string; unlocked: boolean; was: { owner: string; token: number } };
    assert.equal(reply.name, 'stuck');
    assert.equal(reply.unlocked, true);
    assert.equal(reply.was.owner, held.owner);
    assert.equal(reply.was.token, held.token);
    assert.equal(await holdfast.lock('stuck').isLocked(), false);
    await assert.rejects(held.release(), { code: 'LOCK_NOT_HELD' });

    const again = await run(['unlock', '--prefix', 'app:', '--force', 'stuck'], env);
    assert.equal(again.code, 1);
    assert.equal(again.stdout.trim(), '"stuck" was not locked');
  });

  it('reads the password from the environment and never echoes it', async () => {
    const noAuth = await run(['list'], { REDIS_URL: server.url });
    assert.equal(noAuth.code, 69);
    assert.equal(noAuth.stderr.trim().split('\n').length, 1, noAuth.stderr);
    const viaHoldfastVar = await run(['list'], { REDIS_URL: server.url, HOLDFAST_PASSWORD: 's3cret' });
    assert.equal(viaHoldfastVar.code, 0, viaHoldfastVar.stderr);
    const inUrl = await run(['list', '--url', `redis://:wrong@127.0.0.1:${server.port}`], {});
    assert.equal(inUrl.code, 69);
    assert.doesNotMatch(inUrl.stderr, /wrong/);
  });

  it('has --help with examples for every command', async () => {
    for (const command of ['exec', 'inspect', 'list', 'unlock', 'demo']) {
      const r = await run([command, '--help'], {});
      assert.equal(r.code, 0, command);
      assert.match(r.stdout, new RegExp(`^Usage: holdfast ${command}`), command);
      assert.match(r.stdout, /Examples:/, command);
    }
    const top = await run(['--help'], {});
    assert.match(top.stdout, /Commands:/);
  });
});

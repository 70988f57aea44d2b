/**
 * What the GLIDE adapter adds to moving bytes, against a real redis-server: GLIDE's rewritten server errors read as
 * the server's own reply again, connection trouble as RedisConnectionError, RESP3 maps in the RESP2 shape, and the
 * subscriber client made from the user's configuration or from `subscriberConfig`.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { GlideClient } from '@valkey/valkey-glide';
import { glideTransport, Holdfast, RedisConnectionError, ScriptError, toTransport } from '../../src/index.js';
import { runCommand, runScript, type ScriptDef } from '../../src/script.js';
import { glideAddress } from '../support/clients.js';
import { RedisServer } from '../support/redis-server.js';

let server: RedisServer;
const clients: GlideClient[] = [];
async function glide(options: { lazyConnect?: boolean; port?: number } = {}): Promise<GlideClient> {
  const client = await GlideClient.createClient({
    addresses: [options.port === undefined ? glideAddress(server.url) : { host: '127.0.0.1', port: options.port }],
    requestTimeout: 5000,
    ...(options.lazyConnect ? { lazyConnect: true } : {}),
  });
  clients.push(client);
  return client;
}

before(async () => {
  server = await RedisServer.start();
});
after(async () => {
  for (const c of clients) c.close();
  await server.stop();
});

const script = (source: string, numKeys = 1): ScriptDef => ({ name: 'test', numKeys, source, sha: '' });

void describe('GLIDE adapter', () => {
  void it('is chosen by duck typing', async () => {
    assert.equal(toTransport(await glide()).kind, 'glide');
  });

  void it('NOSCRIPT takes the EVAL path: a script unknown to the server runs, and is loaded for the next EVALSHA', async () => {
    const transport = toTransport(await glide());
    const source = "return redis.call('INCR', KEYS[1])";
    const { createHash } = await import('node:crypto');
    const def = { ...script(source), sha: createHash('sha1').update(source).digest('hex') };
    await runCommand(transport, ['SCRIPT', 'FLUSH'], undefined, 2000);
    await assert.rejects(transport.evalsha(def.sha, ['glide:n'], []), (e: Error) => e.name === 'ReplyError' && e.message.startsWith('NOSCRIPT '));
    assert.equal(await runScript(transport, def, ['glide:n'], [], 2000), 1);
    assert.equal(await transport.evalsha(def.sha, ['glide:n'], []), 2, 'loaded by the EVAL');
  });

  void it("a script's runtime error is a ScriptError with the server's code, not a connection error", async () => {
    const transport = toTransport(await glide());
    await runCommand(transport, ['SET', 'glide:s', 'text'], 'glide:s', 2000);
    const { createHash } = await import('node:crypto');
    const source = "return redis.call('INCR', KEYS[1])";
    const def = { ...script(source), sha: createHash('sha1').update(source).digest('hex') };
    await assert.rejects(runScript(transport, def, ['glide:s'], [], 2000), (e: unknown) => e instanceof ScriptError && /: ERR value is not an integer/.test(e.message));
    const custom = "return redis.error_reply('HOLDFAST_TEST something broke')";
    const def2 = { ...script(custom, 0), sha: createHash('sha1').update(custom).digest('hex') };
    await assert.rejects(runScript(transport, def2, [], [], 2000), (e: unknown) => e instanceof ScriptError && /HOLDFAST_TEST something broke/.test(e.message));
    await assert.rejects(runCommand(transport, ['NOSUCHCOMMAND'], undefined, 2000), (e: unknown) => e instanceof ScriptError && /ERR unknown command/.test(e.message));
  });

  void it('an unreachable server and a closed client are RedisConnectionError', async () => {
    const { freePort } = await import('../support/redis-server.js');
    const dead = toTransport(await glide({ lazyConnect: true, port: await freePort() }));
    await assert.rejects(runCommand(dead, ['PING'], undefined, 3000), RedisConnectionError);
    const client = await glide();
    const transport = toTransport(client);
    client.close();
    await assert.rejects(runCommand(transport, ['PING'], undefined, 2000), RedisConnectionError);
  });

  void it('a RESP3 map reply (CONFIG GET) comes in the flat RESP2 shape', async () => {
    const transport = toTransport(await glide());
    assert.deepEqual(await transport.command(['CONFIG', 'GET', 'maxmemory-policy']), ['maxmemory-policy', 'noeviction']);
    await transport.command(['HSET', 'glide:h', 'a', '1']);
    assert.deepEqual(await transport.command(['HGETALL', 'glide:h']), ['a', '1']);
    assert.deepEqual(await transport.command(['HGETALL', 'glide:none']), []);
  });

  void it('the subscriber is a client of its own, made from subscriberConfig when given, closed by holdfast', async () => {
    const client = await glide();
    const named = `holdfast-sub-${process.pid}`;
    const transport = glideTransport(client, { subscriberConfig: { addresses: [glideAddress(server.url)], requestTimeout: 5000, clientName: named } });
    const got: [string, string][] = [];
    const sub = await transport.createSubscriber((channel, message) => got.push([channel, message]), false);
    await sub.subscribe('glide:ch');
    const list = String(await transport.command(['CLIENT', 'LIST']));
    assert.match(list, new RegExp(`name=${named}\\b`), 'the subscriber came from subscriberConfig');
    await transport.command(['PUBLISH', 'glide:ch', 'hello']);
    const deadline = Date.now() + 2000;
    while (got.length === 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 10));
    assert.deepEqual(got, [['glide:ch', 'hello']]);
    await sub.unsubscribe('glide:ch');
    await transport.command(['PUBLISH', 'glide:ch', 'again']);
    await new Promise((r) => setTimeout(r, 100));
    assert.equal(got.length, 1, 'unsubscribed');
    await sub.close();
    await sub.close(); // idempotent
    // GLIDE closes the connection in the background: it must be gone shortly
    let open = true;
    for (const end = Date.now() + 3000; open && Date.now() < end; await new Promise((r) => setTimeout(r, 20))) {
      open = new RegExp(`name=${named}\\b`).test(String(await transport.command(['CLIENT', 'LIST'])));
    }
    assert.equal(open, false, 'the subscriber connection is closed');
  });

  void it('a holdfast client over GLIDE wakes a waiter by pub/sub and leaves the user\'s client open on close()', async () => {
    const client = await glide();
    const a = new Holdfast({ redis: client, prefix: 'glide-wake:' });
    const b = new Holdfast({ redis: await glide(), prefix: 'glide-wake:' });
    const held = await a.lock('x').acquire(); // watchdog lease (30 s): only a message wakes the waiter early
    const waiting = b.lock('x').acquire({ timeout: 5000 });
    await new Promise((r) => setTimeout(r, 200));
    const t0 = performance.now();
    await held.release();
    await (await waiting).release();
    assert.ok(performance.now() - t0 < 1000, `woken after ${Math.round(performance.now() - t0)} ms`);
    await a.close();
    await b.close();
    assert.equal(await client.customCommand(['PING']), 'PONG', "the user's client is still open");
  });
});

// Type level: both GLIDE clients are accepted where a GlideLike is asked for (no cast in user code).
export const typeCheck = (client: GlideClient, cluster: import('@valkey/valkey-glide').GlideClusterClient): unknown[] => [
  glideTransport(client),
  glideTransport(cluster),
];

/**
 * A process exits by itself when nothing waits, even after a wait and without `holdfast.close()`: holdfast's own
 * subscriber connection and timers never keep it alive once its last waiter left. One child process per adapter.
 */
import assert from 'node:assert/strict';
import { Redis } from 'ioredis';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { allAdapters, makeHoldfast } from '../support/clients.js';
import { spawnWorker, waitForExit, waitForLine } from '../support/process.js';
import { until } from '../support/redis-cli.js';
import { RedisServer } from '../support/redis-server.js';
import { sleep } from '../support/suite.js';
import { createTestSchema, dropSchema, POSTGRES_URL } from '../support/postgres.js';

const FIXTURE = join(import.meta.dirname, 'fixtures', 'forgets-close.ts');
/** The subscriber closes this long after its last channel goes idle (the notifier's idle unsubscription). */
const IDLE_MS = 2000;
/** Start-up and closing of a client on a loaded machine, on top of that. */
const SLACK_MS = 8000;

describe('a script that forgets holdfast.close()', { timeout: 120_000 }, () => {
  let server: RedisServer;
  before(async () => {
    server = await RedisServer.start();
  });
  after(async () => {
    await server.stop();
  });

  for (const adapter of allAdapters) {
    it(`exits by itself after a contended acquisition (${adapter.name})`, async (t) => {
      // the in-process backend's own exit test is in test/memory/memory.test.ts
      if (adapter.inProcess) return void t.skip('the child connects to a redis-server by URL: an in-process store lives in one process');
      const schema = adapter.postgres ? createTestSchema('exit') : undefined;
      t.after(() => (schema === undefined ? undefined : dropSchema(schema)));
      const url = schema === undefined ? server.url : `${POSTGRES_URL}?holdfast_schema=${schema}`;
      const child = spawnWorker(FIXTURE, [adapter.name, url]);
      const exited = waitForExit(child, 60_000);
      const waited = Number((await waitForLine(child, /^waited \d+$/)).split(' ')[1]);
      // the second acquisition really waited for the first one's release (the release comes after 300 ms)
      assert.ok(waited >= 250, `waited ${waited} ms`);
      await waitForLine(child, /^done$/).catch(() => {});
      const doneAt = performance.now();
      const bound = IDLE_MS + SLACK_MS;
      const code = await Promise.race([exited, new Promise<'hung'>((r) => setTimeout(() => r('hung'), bound).unref())]);
      if (code === 'hung') child.kill('SIGKILL');
      assert.equal(code, 0, `still running ${bound} ms after it released everything and closed its client`);
      assert.ok(performance.now() - doneAt < bound);
    });
  }
});

describe('the subscriber connection after it closed for being idle', { timeout: 120_000 }, () => {
  let server: RedisServer;
  let direct: Redis;
  before(async () => {
    server = await RedisServer.start();
    direct = new Redis(server.url);
  });
  after(async () => {
    direct.disconnect();
    await server.stop();
  });

  /** Connections the server has open that are subscribed to something. */
  async function subscribers(): Promise<number> {
    const list = String(await direct.call('CLIENT', 'LIST'));
    return list.split('\n').filter((l) => /\b(sub|ssub)=[1-9]/.test(l)).length;
  }

  for (const adapter of allAdapters) {
    it(`closes ${IDLE_MS} ms after the last wait and opens again for the next one, which pub/sub still wakes (${adapter.name})`, async (t) => {
      if (adapter.inProcess) return void t.skip("counts subscribed connections in the server's CLIENT LIST: an in-process store has no connections");
      if (adapter.postgres) return void t.skip("not on PostgreSQL: counts subscribed connections in Redis' CLIENT LIST (that the listening connection closes when idle is what lets the process exit, tested above)");
      const a = await makeHoldfast(adapter, server.url);
      const b = await makeHoldfast(adapter, server.url, { prefix: a.holdfast.core.keys.prefix });
      try {
        for (let round = 0; round < 2; round++) {
          const held = await a.holdfast.lock('idle').acquire(); // watchdog lease: 30 s, so only a message wakes the waiter soon
          const waiting = b.holdfast.lock('idle').acquire({ timeout: 10_000 });
          await until(async () => (await subscribers()) === 1, 5000, 'the waiter subscribed');
          await sleep(100);
          const releasedAt = performance.now();
          await held.release();
          const taken = await waiting;
          const woke = performance.now() - releasedAt;
          assert.ok(woke < 2000, `round ${round}: woken ${Math.round(woke)} ms after the release`);
          await taken.release();
          await until(async () => (await subscribers()) === 0, IDLE_MS + SLACK_MS, 'the idle subscriber closed');
        }
      } finally {
        await a.dispose();
        await b.dispose();
      }
    });
  }
});

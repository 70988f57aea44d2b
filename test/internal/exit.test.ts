/**
 * A process exits by itself when nothing waits, even after a wait and without `holdfast.close()`: holdfast's own
 * subscriber connection and timers never keep it alive once its last waiter left. One child process per adapter.
 */
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { allAdapters } from '../support/clients.js';
import { spawnWorker, waitForExit, waitForLine } from '../support/process.js';
import { RedisServer } from '../support/redis-server.js';

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
    it(`exits by itself after a contended acquisition (${adapter.name})`, async () => {
      const child = spawnWorker(FIXTURE, [adapter.name, server.url]);
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

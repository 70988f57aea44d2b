/**
 * Leader election across OS processes against one real Redis: three candidate processes (ioredis, node-redis and
 * GLIDE in turn) and an observer process. The leader is killed (-9) twice, resigns once, and is paused (SIGSTOP) past
 * its lease; see fixtures/election-scenario.ts for what is checked.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { Holdfast } from '../../src/index.js';
import { adapters as allSelected, makeHoldfast, serverAdapter } from '../support/clients.js';

/**
 * Candidates in other processes meet on one redis-server: the adapters that connect to one (never the in-process
 * store; not PostgreSQL, where the election comes later).
 */
const serverSide = allSelected.filter((a) => !a.inProcess && !a.postgres);
const adapters = serverSide.length > 0 ? serverSide : [serverAdapter];
import { RedisServer } from '../support/redis-server.js';
import { WorkerProcess } from '../support/processes.js';
import { electionScenario, workerScript, type Message } from './fixtures/election-scenario.js';

void describe('Election across processes (Redis)', () => {
  let server: RedisServer;
  let opened: Awaited<ReturnType<typeof makeHoldfast>>;
  let holdfast: Holdfast;
  const prefix = 'mp:';

  before(async () => {
    server = await RedisServer.start();
    opened = await makeHoldfast(adapters[0]!, server.url, { prefix });
    holdfast = opened.holdfast;
  });
  after(async () => {
    await opened.dispose();
    await server.stop();
  });

  void it('kill -9 twice, resign once, SIGSTOP past the lease: one leader at a time, terms in order, stale writes refused', { timeout: 60_000 }, async () => {
    const lease = 1000;
    const result = await electionScenario({
      store: 'redis',
      url: server.url,
      prefix,
      name: 'leader',
      lease,
      adapters: adapters.map((a) => a.name),
      // the lease runs out at most `lease` after the kill; the waiting candidates look again when it does. The bound
      // covers their timers firing late and the attempt's round trip on a loaded machine
      killBoundMs: 1500,
      // the IPC hop, resign, the pub/sub wake and the winning attempt: a few round trips, bounded for a loaded machine
      resignBoundMs: 750,
      leader: () => holdfast.election('leader').leader(),
    });
    console.log(`# election across processes (Redis, lease ${lease} ms): ${JSON.stringify(result)}`);
  });

  void it('a leader whose main module returns without resigning exits by itself; its lease then runs out', { timeout: 30_000 }, async () => {
    const w = WorkerProcess.spawn<Message>('exit', await workerScript(), ['redis', adapters[0]!.name, server.url, prefix, 'exiting', 'x', 'exit', '1000']);
    const elected = await w.waitFor((m) => m.type === 'elected', 20_000);
    const code = await Promise.race([w.exited, new Promise((r) => setTimeout(() => r('still running'), 5000))]);
    await w.kill();
    assert.equal(code, 0, 'the process exited by itself');
    assert.equal((await holdfast.election('exiting').leader())?.term, elected.term, 'it did not resign');
    await new Promise((r) => setTimeout(r, 1100));
    assert.equal(await holdfast.election('exiting').leader(), null, 'the lease ran out');
  });
});

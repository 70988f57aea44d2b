/**
 * Opt-in soak (HOLDFAST_SLOW=1, `npm run test:zookeeper`): 3 worker processes increment a fenced counter under one
 * lock on a 3-node ensemble for ~40 s while faults are injected: kill -9 of the leader and restart, a follower
 * frozen (SIGSTOP) past the session timeout, a follower killed and restarted, and a worker process frozen past its
 * session timeout. Checks: the counter equals the number of accepted writes (no lost update: never two effective
 * holders), every accepted write carried a token larger than the one before it, and the lock kept being granted.
 */
import assert from 'node:assert/strict';
import { after, before, it } from 'node:test';
import { ZkCluster, zkDescribe } from '../../support/zookeeper.js';
import { makeZk, sleep, startWorker, uniq } from '../helpers.js';
import type { ZooKeeperHoldfast } from '../../../src/zookeeper/index.js';

const slow = process.env.HOLDFAST_SLOW === '1';

zkDescribe('ZooKeeper faults soak', () => {
  let zk: ZkCluster;
  let observer: ZooKeeperHoldfast;

  before(async () => {
    zk = await ZkCluster.start({ size: 3, tickTime: 500 });
    observer = await makeZk(zk.connectionString, { sessionTimeout: 6000 });
  });
  after(async () => {
    await observer?.close();
    await zk?.stop();
  });

  void it('server and client faults never produce a lost update; the lock keeps being granted', { timeout: 180_000 }, async () => {
    const name = uniq('soak');
    const resource = uniq('counter');
    const duration = 40_000;
    const workers = [0, 1, 2].map(() => startWorker(['fenced-count', zk.connectionString, name, '4000', resource, String(duration)]));
    const faults: string[] = [];
    const step = async (label: string, fn: () => Promise<void> | void): Promise<void> => {
      faults.push(label);
      await fn();
    };
    await sleep(4000);
    const leader = await zk.leader();
    assert.ok(leader);
    await step(`kill -9 leader ${leader.id}`, () => leader.kill());
    await sleep(3000);
    await step(`restart ${leader.id}`, () => leader.launch());
    await sleep(4000);
    const follower = zk.nodes.find((n) => n !== leader)!;
    await step(`SIGSTOP follower ${follower.id} for 6 s`, async () => {
      follower.pause();
      await sleep(6000);
      follower.resume();
    });
    await sleep(3000);
    const other = zk.nodes.find((n) => n !== leader && n !== follower)!;
    await step(`kill -9 node ${other.id}, restart after 3 s`, async () => {
      await other.kill();
      await sleep(3000);
      other.launch();
    });
    await sleep(3000);
    await step('SIGSTOP worker 0 for 7 s (past its 4 s session)', async () => {
      workers[0]!.child.kill('SIGSTOP');
      await sleep(7000);
      workers[0]!.child.kill('SIGCONT');
    });
    const results = await Promise.all(workers.map((w) => w.waitFor((l) => typeof l.accepted === 'number', 90_000)));
    await Promise.all(workers.map((w) => w.exited));
    const accepted = results.reduce((n, r) => n + (r.accepted as number), 0);
    const stale = results.reduce((n, r) => n + (r.stale as number), 0);
    const failures = results.reduce((n, r) => n + (r.failures as number), 0);
    const counter = Number((await observer.fencedRead(resource))?.value ?? 0);
    console.log(`# faults: ${faults.join('; ')}`);
    console.log(`# accepted writes ${accepted}, counter ${counter}, stale writes rejected ${stale}, failed attempts ${failures}`);
    assert.equal(counter, accepted, 'every accepted increment is in the counter: no two effective holders');
    for (const r of results) {
      const t = r.tokens as number[];
      for (let i = 1; i < t.length; i++) assert.ok(t[i]! > t[i - 1]!);
      assert.ok(t.length > 0, 'every worker got the lock');
    }
    assert.ok(accepted > 100, `accepted ${accepted}`);
  });
}, !slow && 'set HOLDFAST_SLOW=1 (npm run test:zookeeper)');

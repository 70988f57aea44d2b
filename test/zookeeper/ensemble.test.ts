/**
 * A 3-node ZooKeeper ensemble: killing the leader (kill -9) while clients contend for a lock never yields two
 * holders, tokens keep growing in grant order, and the lock keeps being granted after the new election.
 */
import assert from 'node:assert/strict';
import { after, before, it } from 'node:test';
import type { ZooKeeperHoldfast } from '../../src/zookeeper/index.js';
import { ZkCluster, zkDescribe } from '../support/zookeeper.js';
import { makeZk, sleep, uniq } from './helpers.js';

interface Grant {
  client: number;
  token: number;
  from: number;
  to: number;
}

zkDescribe('ZooKeeper ensemble', () => {
  let zk: ZkCluster;
  const clients: ZooKeeperHoldfast[] = [];

  before(async () => {
    zk = await ZkCluster.start({ size: 3 });
    for (let i = 0; i < 3; i++) clients.push(await makeZk(zk.connectionString, { sessionTimeout: 4000, commandTimeout: 3000 }));
  });
  after(async () => {
    await Promise.all(clients.map((c) => c.close()));
    await zk?.stop();
  });

  void it('kill -9 of the leader during use: never two holders, tokens grow, grants go on', async () => {
    const name = uniq('leader');
    const grants: Grant[] = [];
    let counter = 0;
    let errors = 0;
    let stop = false;
    const loops = clients.map(async (zkc, client) => {
      while (!stop) {
        try {
          const held = await zkc.lock(name).acquire({ timeout: 8000 });
          const from = performance.now();
          let lostAt = Infinity;
          held.signal.addEventListener('abort', () => (lostAt = performance.now()));
          // a non-atomic read-modify-write: two holders at once would lose updates
          const seen = counter;
          await sleep(10);
          if (!held.lost) counter = seen + 1;
          const to = Math.min(performance.now(), lostAt);
          grants.push({ client, token: held.token, from, to });
          await held[Symbol.asyncDispose]();
        } catch {
          errors++;
          await sleep(50);
        }
      }
    });
    const until = async (pred: () => boolean, ms: number): Promise<void> => {
      const end = performance.now() + ms;
      while (!pred() && performance.now() < end) await sleep(50);
    };
    await until(() => grants.length >= 10, 20_000);
    const leader = await zk.leader();
    assert.ok(leader, 'the ensemble has a leader');
    const before = grants.length;
    await leader.kill();
    const killedAt = performance.now();
    await sleep(2000);
    await until(() => grants.filter((g) => g.from > killedAt).length >= 10, 30_000);
    leader.launch();
    await sleep(1500);
    stop = true;
    await Promise.all(loops);

    const sorted = [...grants].sort((x, y) => x.from - y.from);
    for (let i = 1; i < sorted.length; i++) {
      assert.ok(sorted[i]!.from >= sorted[i - 1]!.to, `grant ${i} overlaps the previous one: ${JSON.stringify([sorted[i - 1], sorted[i]])}`);
      assert.ok(sorted[i]!.token > sorted[i - 1]!.token, 'tokens grow in grant order');
    }
    assert.ok(before >= 10, `grants before the kill: ${before}`);
    const afterKill = sorted.filter((g) => g.from > killedAt).length;
    assert.ok(afterKill >= 10, `grants after the kill: ${afterKill}`);
    assert.ok(counter <= grants.length && counter >= grants.length - 3, `counter ${counter} vs grants ${grants.length}`);
    const firstAfter = sorted.find((g) => g.from > killedAt);
    const lastBefore = [...sorted].reverse().find((g) => g.from <= killedAt);
    console.log(
      `# ${grants.length} grants (${afterKill} after the leader was killed), ${errors} failed attempts, counter ${counter}, ` +
        `longest gap around the kill ${Math.round((firstAfter?.from ?? NaN) - (lastBefore?.to ?? NaN))} ms`,
    );
  });
});

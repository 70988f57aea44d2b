/**
 * Leader election on ZooKeeper (Curator's LeaderLatch recipe) against a real standalone ZooKeeper: hand-over on
 * resign with a higher term (czxid), leader(), observe() in term order, the timeout / signal contract, bad input,
 * and the multi-process scenario of the Redis election (fixtures/election-scenario.ts): kill -9 twice, resign once,
 * SIGSTOP past the session timeout.
 */
import assert from 'node:assert/strict';
import dc from 'node:diagnostics_channel';
import { it } from 'node:test';
import { CHANNELS, type ElectionMessage } from '../../src/index.js';
import { AcquireTimeoutError, LockLostError, type ElectionChange, type ZooKeeperHoldfast } from '../../src/zookeeper/index.js';
import { electionScenario } from '../primitives/fixtures/election-scenario.js';
import { TcpProxy } from '../support/tcp-proxy.js';
import { type ZkCluster, zkDescribe } from '../support/zookeeper.js';
import { makeZk, sleep, twoClients, uniq } from './helpers.js';

zkDescribe('ZooKeeper Election', () => {
  let zk: ZkCluster;
  let a: ZooKeeperHoldfast;
  let b: ZooKeeperHoldfast;

  twoClients((...started) => ([zk, a, b] = started));

  void it('campaign, resign: the next candidate leads at once, with a higher term; leader() and inspect() follow', async () => {
    const name = uniq('handover');
    const ea = a.election(name, { label: 'a' });
    const eb = b.election(name, { label: 'b' });
    assert.equal(await ea.leader(), null);
    const la = await ea.campaign();
    assert.ok(la.term > 0);
    assert.equal(la.leading, true);
    const seen = await eb.leader();
    assert.equal(seen?.term, la.term);
    assert.equal(seen?.label, 'a');
    assert.equal(seen?.remainingMs, null);
    const waiting = eb.campaign({ timeout: 20_000 });
    // the candidate's node is there once its create() went through (not within a fixed time on a loaded machine)
    let candidates: string[] = [];
    for (let i = 0; i < 200 && candidates.length === 0; i++) {
      await sleep(50);
      candidates = (await ea.inspect()).candidates.map((c) => c.label);
    }
    assert.deepEqual(candidates, ['b']);
    const t0 = performance.now();
    await la.resign();
    const lb = await waiting;
    const handover = performance.now() - t0;
    assert.ok(handover < 1000, `handed over in ${handover.toFixed(1)} ms`);
    assert.ok(lb.term > la.term, `${lb.term} > ${la.term}`);
    assert.equal(la.leading, false);
    assert.equal(la.signal.aborted, false, 'a resignation is not a loss');
    assert.equal((await ea.leader())?.label, 'b');
    await lb.resign();
    assert.equal(await ea.leader(), null);
  });

  void it('forceResign deposes the leader (signal aborts, taken-over); close() resigns', async () => {
    const name = uniq('force');
    const la = await a.election(name).campaign();
    const waiting = b.election(name).campaign({ timeout: 5000 });
    await sleep(100);
    assert.equal(await b.election(name).forceResign(), true);
    const lb = await waiting;
    assert.ok(lb.term > la.term);
    assert.equal((la.signal.reason as LockLostError | undefined)?.reason, 'taken-over');
    await lb.resign();
    const c = await makeZk(zk.connectionString);
    const lc = await c.election(name).campaign();
    const waitingB = b.election(name).campaign({ timeout: 5000 });
    await sleep(100);
    const t0 = performance.now();
    await c.close();
    const lb2 = await waitingB;
    assert.ok(performance.now() - t0 < 1000, 'close() resigned: no session timeout to wait');
    assert.ok(lb2.term > lc.term);
    assert.equal(lc.leading, false);
    await lb2.resign();
  });

  void it('a leader cut off from ZooKeeper loses before another leads; its fenced write is refused once it is back', async () => {
    const proxy = await TcpProxy.start(zk.nodes[0]!.clientPort);
    const c = await makeZk(proxy.address, { sessionTimeout: 2000 });
    try {
      const name = uniq('cut');
      const resource = uniq('resource');
      const lc = await c.election(name, { label: 'c' }).campaign();
      await c.fencedWrite(resource, lc.term, 'from c');
      let lostAt = 0;
      lc.signal.addEventListener('abort', () => (lostAt = performance.now()));
      const waiting = a.election(name, { label: 'a' }).campaign({ timeout: 15_000 });
      await sleep(100);
      proxy.blackhole();
      const la = await waiting;
      const electedAt = performance.now();
      assert.ok(lostAt > 0 && lostAt <= electedAt, 'the cut-off leader knew it lost before the new one was elected');
      assert.equal((lc.signal.reason as LockLostError).reason, 'connection');
      assert.ok(la.term > lc.term);
      await a.fencedWrite(resource, la.term, 'from a');
      proxy.heal();
      proxy.cutAll(); // its session expired: the client starts a new one
      let refused: boolean | undefined;
      for (let i = 0; i < 50 && refused === undefined; i++) {
        refused = await c.fencedWrite(resource, lc.term, 'stale write from c').then(
          () => false,
          async (error: unknown) => {
            if ((error as { code?: string }).code === 'STALE_TOKEN') return true;
            await sleep(100);
            return undefined;
          },
        );
      }
      assert.equal(refused, true, "the old leader's write with its old term was refused");
      assert.equal((await a.fencedRead(resource))?.value, 'from a');
      await la.resign();
    } finally {
      await c.close();
      await proxy.stop();
    }
  });

  void it('observe(): the leader now, then every change in term order', async () => {
    const name = uniq('observed');
    const ac = new AbortController();
    const changes: ElectionChange[] = [];
    const observing = (async () => {
      for await (const change of b.election(name).observe({ signal: ac.signal })) changes.push(change);
    })();
    await sleep(200);
    const l1 = await a.election(name, { label: 'a' }).campaign();
    await sleep(200);
    await l1.resign();
    await sleep(200);
    const l2 = await b.election(name, { label: 'b' }).campaign();
    await sleep(200);
    await l2.resign();
    await sleep(200);
    ac.abort();
    await observing;
    const shape = changes.map((c) => (c.leader ? `${c.leader.label}@${c.term}` : `none@${c.term}`));
    assert.deepEqual(shape, ['none@0', `a@${l1.term}`, `none@${l1.term}`, `b@${l2.term}`, `none@${l2.term}`]);
  });

  void it('timeout and signal: typed timeout, the signal reason, no node left behind', async () => {
    const name = uniq('wait');
    const la = await a.election(name).campaign();
    await assert.rejects(b.election(name).campaign({ timeout: 0 }), AcquireTimeoutError);
    await assert.rejects(b.election(name).campaign({ timeout: 150 }), AcquireTimeoutError);
    const ac = new AbortController();
    const waiting = b.election(name).campaign({ signal: ac.signal });
    await sleep(100);
    ac.abort(new Error('shutting down'));
    await assert.rejects(waiting, /shutting down/);
    assert.deepEqual((await a.election(name).inspect()).candidates, []);
    await la.resign();
  });

  void it('run() leads and resigns on the way out; diagnostics say campaign, elected, resigned', async () => {
    const name = uniq('loop');
    const messages: string[] = [];
    const listener = (m: unknown): void => {
      const msg = m as ElectionMessage;
      if (msg.name === name) messages.push(`${msg.kind}:${msg.event}`);
    };
    dc.subscribe(CHANNELS.election, listener);
    try {
      const ac = new AbortController();
      let term = 0;
      const running = a.election(name).run(
        async (scope) => {
          term = scope.term;
          await new Promise((resolve) => scope.signal.addEventListener('abort', resolve));
        },
        { signal: ac.signal },
      );
      while (term === 0) await sleep(20);
      assert.equal((await b.election(name).leader())?.term, term);
      ac.abort();
      await running;
      assert.equal(await b.election(name).leader(), null);
      assert.deepEqual(messages, ['zk-election:campaign', 'zk-election:elected', 'zk-election:resigned']);
    } finally {
      dc.unsubscribe(CHANNELS.election, listener);
    }
  });

  void it('rejects bad input with typed errors', async () => {
    assert.throws(() => a.election(null as never), TypeError);
    assert.throws(() => a.election('x', { label: 1 } as never), TypeError);
    await assert.rejects(a.election('x').campaign({ lease: 1000 } as never), TypeError);
    await assert.rejects(a.election('x').campaign({ timeout: -1 }), RangeError);
    assert.throws(() => a.election('x').run(() => {}, { lease: 1000 } as never), TypeError);
    assert.throws(() => a.election('x').observe({ signal: 'no' } as never), TypeError);
  });

  void it('across processes: kill -9 twice, resign once, SIGSTOP past the session timeout', { timeout: 60_000 }, async () => {
    const root = `/${uniq('mp')}`;
    const sessionTimeout = 1500;
    const observer = await makeZk(zk.connectionString, { root });
    try {
      const result = await electionScenario({
        store: 'zk',
        url: zk.connectionString,
        prefix: root,
        name: 'leader',
        lease: sessionTimeout,
        adapters: ['-'],
        // the server expires a dead session on its next tick after the timeout (tickTime 200 ms); the successor's
        // watch fires then. The bound covers that tick, the watch and a loaded machine
        killBoundMs: 2000,
        // the IPC hop, the node's deletion and the successor's watch + queue read, on a loaded machine
        resignBoundMs: 1000,
        leader: () => observer.election('leader').leader(),
      });
      console.log(`# election across processes (ZooKeeper, session timeout ${sessionTimeout} ms): ${JSON.stringify(result)}`);
    } finally {
      await observer.close();
    }
  });
});

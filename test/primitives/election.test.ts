import assert from 'node:assert/strict';
import dc from 'node:diagnostics_channel';
import { after, before, it } from 'node:test';
import { AcquireTimeoutError, CHANNELS, LockLostError, ReplicationNotReachedError, StaleTokenError, type ElectionChange, type ElectionMessage, type Holdfast } from '../../src/index.js';
import { FaultProxy } from '../support/fault-proxy.js';
import { cli, infoField, until } from '../support/redis-cli.js';
import { RedisServer } from '../support/redis-server.js';
import { describeEachAdapter, sleep } from '../support/suite.js';

/** ms of one round trip to the server (the slowest of a few): the unit of the timing bounds below. */
async function roundTrip(holdfast: Holdfast): Promise<number> {
  let worst = 0;
  for (let i = 0; i < 5; i++) {
    const t0 = performance.now();
    await holdfast.election('rtt').leader();
    worst = Math.max(worst, performance.now() - t0);
  }
  return worst;
}

/** Keys under the client's prefix but the shared fencing counters (the suite's server is its own: KEYS is fine). */
async function keysOf(holdfast: Holdfast): Promise<string[]> {
  const keys = (await holdfast.core.command(['KEYS', `${holdfast.settings.prefix}*`])) as string[];
  return keys.filter((k) => !/^[^{]*\{[0-9a-z]+\}:fence$/.test(k)).sort();
}

describeEachAdapter('Election', (ctx) => {
  let proxy: FaultProxy;
  before(async () => {
    proxy = await FaultProxy.start(ctx.server.port);
  });
  after(async () => {
    await proxy.close();
  });

  /** Two more clients sharing one prefix: two candidates as two processes would be. */
  async function pair(): Promise<[Holdfast, Holdfast]> {
    const prefix = `el${Math.random().toString(36).slice(2, 8)}:`;
    const a = await ctx.open({ prefix });
    const b = await ctx.open({ prefix });
    return [a.holdfast, b.holdfast];
  }

  void it('campaign, resign: the next candidate leads within a round trip, with a higher term', async () => {
    const [a, b] = await pair();
    const ea = a.election('handover', { label: 'a' });
    const eb = b.election('handover', { label: 'b' });
    assert.equal(await ea.leader(), null);
    const la = await ea.campaign({ lease: 2000 });
    assert.ok(la.term > 0);
    assert.equal(la.leading, true);
    assert.equal(la.label, 'a');
    const seen = await eb.leader();
    assert.equal(seen?.term, la.term);
    assert.equal(seen?.label, 'a');
    assert.match(seen?.fingerprint ?? '', /^[0-9a-f]{12}$/);
    assert.ok(Math.abs((seen?.since ?? 0) - Date.now()) < 5000, 'since is a wall-clock time');
    const waiting = eb.campaign({ lease: 2000 });
    await sleep(100);
    const info = await ea.inspect();
    assert.deepEqual(info.candidates.map((c) => c.label), ['b'], 'the waiting candidate is listed');
    assert.ok(info.lastTerm >= la.term);
    const rtt = await roundTrip(a);
    const t0 = performance.now();
    await la.resign();
    const lb = await waiting;
    const handover = performance.now() - t0;
    // resign + the wake over pub/sub + the winning attempt: three round trips; generous for a loaded machine
    assert.ok(handover < 20 * rtt + 200, `handed over in ${handover.toFixed(1)} ms (round trip ${rtt.toFixed(1)} ms)`);
    assert.ok(lb.term > la.term, `term ${lb.term} after ${la.term}`);
    assert.equal(la.leading, false);
    assert.equal(la.signal.aborted, false, 'a resignation is not a loss');
    assert.equal((await ea.leader())?.label, 'b');
    assert.equal((await ea.inspect()).candidates.length, 0, 'the winner left the candidates');
    await la.resign(); // idempotent
    await lb.resign();
    assert.equal(await ea.leader(), null);
    assert.deepEqual(await keysOf(a), [], 'no key left behind but the shared counters');
  });

  void it('the signal aborts on loss before another candidate leads; a stale leader is fenced off', async () => {
    const [a, b] = await pair();
    const ea = a.election('loss', { label: 'a' });
    const eb = b.election('loss', { label: 'b' });
    const la = await ea.campaign({ lease: 400 });
    const resource = a.fencedKey('loss-resource');
    await resource.set('from a', la.term);
    let lostAt = 0;
    la.signal.addEventListener('abort', () => (lostAt = performance.now()));
    la.stopRefresh(); // as a leader paused past its lease: nothing renews it
    const lb = await eb.campaign({ lease: 400, timeout: 5000 });
    const electedAt = performance.now();
    assert.ok(lostAt > 0 && lostAt <= electedAt, 'the old leader knew it lost before the new one was elected');
    assert.ok(la.signal.reason instanceof LockLostError);
    assert.equal((la.signal.reason).reason, 'expired');
    assert.ok(lb.term > la.term);
    await resource.set('from b', lb.term);
    await assert.rejects(resource.set('stale write from a', la.term), StaleTokenError);
    assert.equal((await resource.get()).value, 'from b');
    await la.resign(); // no throw for a lost leadership
    await lb.resign();
  });

  void it('a leader cut off from Redis loses before another leads; its fenced write is refused once it is back', async (t) => {
    if (!ctx.requireServer(t, 'cuts the connection with a fault proxy in front of a redis-server')) return;
    const prefix = `cut${Math.random().toString(36).slice(2, 8)}:`;
    const a = (await ctx.open({ prefix, commandTimeout: 300 }, proxy.url)).holdfast;
    const b = (await ctx.open({ prefix })).holdfast;
    try {
      const la = await a.election('cut', { label: 'a' }).campaign({ lease: 600 });
      await a.fencedKey('cut-resource').set('from a', la.term);
      let lostAt = 0;
      la.signal.addEventListener('abort', () => (lostAt = performance.now()));
      const waiting = b.election('cut', { label: 'b' }).campaign({ lease: 600, timeout: 10_000 });
      await sleep(50);
      proxy.blackhole('up');
      proxy.blackhole('down');
      const lb = await waiting;
      const electedAt = performance.now();
      assert.ok(lostAt > 0 && lostAt <= electedAt, 'the cut-off leader knew it lost before the new one was elected');
      assert.ok(['renewal-failed', 'connection'].includes((la.signal.reason as LockLostError).reason), String(la.signal.reason));
      assert.ok(lb.term > la.term);
      await b.fencedKey('cut-resource').set('from b', lb.term);
      proxy.heal();
      proxy.cut(); // the half-dead connection: let the client reconnect
      // back on the network, the old leader's write with its old term is refused
      let accepted: boolean | undefined;
      for (let i = 0; i < 50 && accepted === undefined; i++) {
        accepted = await a.fencedKey('cut-resource').trySet('stale write from a', la.term).catch(async () => {
          await sleep(100);
          return undefined;
        });
      }
      assert.equal(accepted, false);
      assert.equal((await b.fencedKey('cut-resource').get()).value, 'from b');
      await lb.resign();
    } finally {
      proxy.heal();
    }
  });

  void it('run() outlives Redis being unreachable for a while: it campaigns again and leads once it is back', async (t) => {
    if (!ctx.requireServer(t, 'makes a redis-server unreachable for a while')) return;
    const prefix = `blip${Math.random().toString(36).slice(2, 8)}:`;
    const a = (await ctx.open({ prefix, commandTimeout: 300 }, proxy.url)).holdfast;
    const b = (await ctx.open({ prefix })).holdfast;
    try {
      const lb = await b.election('blip').campaign({ lease: 1000 });
      const terms: number[] = [];
      const ac = new AbortController();
      const running = a.election('blip').run(
        async ({ term, signal }) => {
          terms.push(term);
          await new Promise((resolve) => signal.addEventListener('abort', resolve));
        },
        { signal: ac.signal, lease: 1000 },
      );
      await sleep(100);
      proxy.blackhole('up');
      proxy.blackhole('down');
      await lb.resign();
      await sleep(1500); // a's campaigns time out meanwhile (commandTimeout 300 ms)
      assert.deepEqual(terms, [], 'cut off, it could not lead');
      proxy.heal();
      proxy.cut(); // the half-dead connections: let the client reconnect
      const deadline = performance.now() + 8000;
      while (terms.length === 0 && performance.now() < deadline) await sleep(50);
      assert.equal(terms.length, 1, 'it led once Redis was back');
      assert.ok(terms[0]! > lb.term);
      ac.abort();
      assert.equal(await running, undefined);
      assert.equal(await b.election('blip').leader(), null);
    } finally {
      proxy.heal();
    }
  });

  void it('forceResign deposes the leader: its signal aborts at its next renewal, a candidate takes over', async () => {
    const [a, b] = await pair();
    // leases long enough that a loaded machine's renewals do not miss them: the deposed leader must learn it at a renewal
    const la = await a.election('force').campaign({ lease: 3000 });
    const waiting = b.election('force').campaign({ lease: 3000, timeout: 10_000 });
    await sleep(50);
    assert.equal(await b.election('force').forceResign(), true);
    const lb = await waiting;
    assert.ok(lb.term > la.term);
    await new Promise<void>((resolve) => (la.signal.aborted ? resolve() : la.signal.addEventListener('abort', () => resolve())));
    assert.equal((la.signal.reason as LockLostError).reason, 'taken-over');
    assert.equal(await b.election('force').forceResign(), true);
    assert.equal(await b.election('force').forceResign(), false);
  });

  void it('the watchdog keeps a leader past its lease; health reports the lease left', async () => {
    // 1.5 s leases renewed every 500 ms, held past two of them: a renewal may come late on a loaded machine, not 1 s late
    const la = await ctx.holdfast.election('watchdog').campaign({ lease: 1500 });
    await sleep(3500);
    assert.equal(la.leading, true);
    assert.equal(la.signal.aborted, false);
    assert.ok(la.leaseRemainingMs > 0 && la.leaseRemainingMs <= 1500, `lease left ${la.leaseRemainingMs}`);
    assert.equal(la.leaseMs, 1500);
    assert.equal(la.refreshing, true);
    await la.resign();
    assert.equal(la.leaseRemainingMs, 0);
  });

  void it('terms strictly increase over many terms', async () => {
    const election = ctx.holdfast.election('terms');
    let last = 0;
    for (let i = 0; i < 20; i++) {
      const l = await election.campaign({ lease: 1000 });
      assert.ok(l.term > last);
      last = l.term;
      await l.resign();
    }
  });

  void it('observe(): the leader now, then every change in term order; a slow observer gets the latest', async () => {
    const [a, b] = await pair();
    const ea = a.election('observed', { label: 'a' });
    const eb = b.election('observed', { label: 'b' });
    const ac = new AbortController();
    const changes: ElectionChange[] = [];
    const observing = (async () => {
      for await (const change of b.election('observed').observe({ signal: ac.signal })) changes.push(change);
    })();
    await sleep(100);
    const l1 = await ea.campaign({ lease: 300 });
    await sleep(100);
    await l1.resign();
    await sleep(100);
    const l2 = await eb.campaign({ lease: 300 });
    await sleep(100);
    l2.stopRefresh(); // expires: no publish, the observer looks again when the lease runs out
    await sleep(700);
    ac.abort();
    await observing;
    const shape = changes.map((c) => (c.leader ? `${c.leader.label}@${c.term}` : `none@${c.term}`));
    assert.deepEqual(shape, ['none@0', `a@${l1.term}`, `none@${l1.term}`, `b@${l2.term}`, `none@${l2.term}`]);

    // a slow consumer: three terms pass while it does not pull; the next value is the latest
    const slow = ea.observe();
    const first = await slow.next();
    assert.equal(first.value?.leader, null);
    let last = 0;
    for (let i = 0; i < 3; i++) {
      const l = await ea.campaign({ lease: 1000 });
      last = l.term;
      if (i < 2) await l.resign();
    }
    await sleep(100);
    const next = await slow.next();
    assert.equal(next.value?.term, last, 'the latest leader, not the first change');
    await slow.return(undefined);
    await a.election('observed').forceResign();
  });

  void it('timeout and signal: typed timeout, the signal reason, and a candidate that gives up leaves the list', async () => {
    const [a, b] = await pair();
    const la = await a.election('wait').campaign({ lease: 2000 });
    const eb = b.election('wait');
    await assert.rejects(eb.campaign({ timeout: 0 }), AcquireTimeoutError);
    const t0 = performance.now();
    await assert.rejects(eb.campaign({ timeout: 150 }), AcquireTimeoutError);
    assert.ok(performance.now() - t0 >= 145, 'not before the timeout');
    const ac = new AbortController();
    const waiting = eb.campaign({ signal: ac.signal });
    await sleep(50);
    ac.abort(new Error('shutting down'));
    await assert.rejects(waiting, /shutting down/);
    await sleep(50);
    assert.deepEqual((await eb.inspect()).candidates, [], 'gave-up candidates withdrew');
    await assert.rejects(eb.campaign({ signal: AbortSignal.abort(new Error('already')) }), /already/);
    await la.resign();
  });

  void it('run(): leads, campaigns again after a loss, resigns when its signal aborts', async () => {
    const [a, b] = await pair();
    const terms: number[] = [];
    const ac = new AbortController();
    const running = a.election('loop').run(
      async ({ term, signal, leadership }) => {
        terms.push(term);
        if (terms.length === 1) {
          leadership.stopRefresh(); // the first term is lost when its lease runs out
        }
        await new Promise((resolve) => signal.addEventListener('abort', resolve));
      },
      { signal: ac.signal, lease: 300 },
    );
    while (terms.length < 2) await sleep(20);
    assert.ok(terms[1]! > terms[0]!);
    ac.abort();
    assert.equal(await running, undefined);
    assert.equal(await b.election('loop').leader(), null, 'resigned on the way out');

    // fn returning while leading: resigns, resolves with its value
    assert.equal(await a.election('loop').run(({ term }) => term > 0 ? 'done' : 'no'), 'done');
    assert.equal(await b.election('loop').leader(), null);
    // fn throwing while leading: resigns, rejects with its error
    await assert.rejects(a.election('loop').run(() => Promise.reject(new Error('boom'))), /boom/);
    assert.equal(await b.election('loop').leader(), null);
  });

  void it('close() resigns: a waiting candidate elsewhere leads at once', async () => {
    const prefix = `cl${Math.random().toString(36).slice(2, 8)}:`;
    const a = await ctx.open({ prefix });
    const b = await ctx.open({ prefix });
    const la = await a.holdfast.election('close').campaign({ lease: 10_000 });
    const waiting = b.holdfast.election('close').campaign({ timeout: 5000 });
    await sleep(50);
    const rtt = await roundTrip(b.holdfast);
    const t0 = performance.now();
    await a.holdfast.close();
    const lb = await waiting;
    assert.ok(performance.now() - t0 < 20 * rtt + 200, 'not a lease wait');
    assert.ok(lb.term > la.term);
    assert.equal(la.leading, false);
    await lb.resign();
  });

  void it("the client's replicaSync: elected once a replica has it; resigned with ReplicationNotReachedError when not", async (t) => {
    if (!ctx.requireServer(t, 'needs a replica')) return;
    const replica = await RedisServer.start({ args: ['--replicaof', '127.0.0.1', String(ctx.server.port)] });
    try {
      await until(async () => infoField(await cli(replica.port, 'INFO', 'replication'), 'master_link_status') === 'up', 10_000, 'replica link');
      // 3 s for the replica's acknowledgement: a loaded machine can take longer than a few hundred ms
      const { holdfast } = await ctx.open({ replicaSync: { replicas: 1, timeout: 3000 } });
      const l = await holdfast.election('synced').campaign({ lease: 5000 });
      assert.equal(await cli(replica.port, 'EXISTS', holdfast.core.keys.election('synced')), '1');
      await l.resign();
      replica.pause();
      try {
        await assert.rejects(holdfast.election('synced').campaign({ lease: 5000 }), ReplicationNotReachedError);
        assert.equal(await holdfast.election('synced').leader(), null, 'resigned on the master');
      } finally {
        replica.resume();
      }
    } finally {
      await replica.stop();
    }
  });

  void it('an observer ends when its client closes', async () => {
    const opened = await ctx.open();
    const seen: ElectionChange[] = [];
    const observing = (async () => {
      for await (const change of opened.holdfast.election('closing').observe()) seen.push(change);
    })();
    await until(() => seen.length > 0, 10_000, 'the first look (no leader)'); // then it waits on pub/sub
    const t0 = performance.now();
    await opened.holdfast.close();
    await observing;
    assert.ok(performance.now() - t0 < 1000, 'ended at once, not at its next look');
    assert.deepEqual(seen.map((c) => c.leader), [null]);
  });

  void it('publishes campaign, elected, resigned and lost on the diagnostics channel', async () => {
    const messages: ElectionMessage[] = [];
    const listener = (m: unknown): void => {
      if ((m as ElectionMessage).name === 'diag') messages.push(m as ElectionMessage);
    };
    dc.subscribe(CHANNELS.election, listener);
    try {
      const election = ctx.holdfast.election('diag', { label: 'me' });
      const l1 = await election.campaign({ lease: 300 });
      await l1.resign();
      const l2 = await election.campaign({ lease: 300 });
      l2.stopRefresh();
      await new Promise((resolve) => l2.signal.addEventListener('abort', resolve));
      await sleep(10);
      assert.deepEqual(
        messages.map((m) => `${m.event}:${m.term}:${m.label}:${m.kind}`),
        [`campaign:0:me:election`, `elected:${l1.term}:me:election`, `resigned:${l1.term}:me:election`, 'campaign:0:me:election', `elected:${l2.term}:me:election`, `lost:${l2.term}:me:election`],
      );
      assert.equal(messages.at(-1)?.reason, 'expired');
      assert.equal(messages[1]?.fingerprint, messages[2]?.fingerprint);
    } finally {
      dc.unsubscribe(CHANNELS.election, listener);
    }
  });

  void it('rejects bad input with typed errors before any Redis call', async () => {
    const h = ctx.holdfast;
    assert.throws(() => h.election(null as never), TypeError);
    assert.throws(() => h.election(''), RangeError);
    assert.throws(() => h.election('x', { label: 5 } as never), TypeError);
    assert.throws(() => h.election('x', { label: 'x'.repeat(300) }), RangeError);
    assert.throws(() => h.election('x', { lable: 'typo' } as never), TypeError);
    const e = h.election('x');
    await assert.rejects(e.campaign({ lease: 50 }), RangeError);
    await assert.rejects(e.campaign({ lease: '1000' } as never), TypeError);
    await assert.rejects(e.campaign({ timeout: -1 }), RangeError);
    await assert.rejects(e.campaign({ signal: 'no' } as never), TypeError);
    await assert.rejects(e.campaign({ leaseMs: 1000 } as never), TypeError);
    assert.throws(() => e.run(undefined as never), TypeError);
    assert.throws(() => e.run(() => {}, { lease: 10 }), RangeError);
    assert.throws(() => e.observe({ signal: 1 } as never), TypeError);
    assert.equal(await e.leader(), null, 'nothing was written');
  });
}, { notOnPostgres: 'leader election comes to PostgreSQL in a later round' });

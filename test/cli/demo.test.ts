 
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readFileSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { Redis } from 'ioredis';
import { Holdfast, ioredisTransport, type RedisTransport } from '../../src/index.js';
import { analyze, overlapOf, verdict, type DemoEvent } from '../../src/cli/demo/analyze.js';
import { acquire, type DemoKeys, type SchemeContext, type SchemeId } from '../../src/cli/demo/schemes.js';
import { ensureBuilt, run, sleep } from '../support/cli.js';
import { rawCommand, RedisServer } from '../support/redis-server.js';
import { startThrowaway } from '../../src/cli/demo/redis.js';

describe('demo analysis (pure)', () => {
  const facts = { scheme: 'same-value', fault: 'pause', workers: 2, startAt: 0, endAt: 1000, counter: 1, lockPttl: -2 } as const;

  it('finds overlapping critical sections and lost updates', () => {
    const events: DemoEvent[] = [
      { t: 0, w: 'w0', type: 'acquired' },
      { t: 500, w: 'w0', type: 'paused', from: 10 },
      { t: 510, w: 'w0', type: 'written', ok: true },
      { t: 511, w: 'w0', type: 'release-start' },
      { t: 512, w: 'w0', type: 'released', outcome: 'deleted-other' },
      { t: 400, w: 'w1', type: 'acquired' },
      { t: 520, w: 'w1', type: 'written', ok: true },
      { t: 521, w: 'w1', type: 'release-start' },
      { t: 522, w: 'w1', type: 'released', outcome: 'expired' },
    ];
    const r = analyze(events, facts);
    assert.equal(r.writes, 2);
    assert.equal(r.lostUpdates, 1);
    assert.equal(r.deletedOthers, 1);
    assert.equal(r.overlaps, 1);
    assert.equal(r.overlapMs, 110);
    assert.deepEqual(r.overlapSpans, [{ start: 400, end: 510 }]);
    assert.equal(r.stuck, false);
    assert.equal(verdict(r), "LOST UPDATES, DELETED OTHERS' LOCK");
  });

  it('calls a crash stuck only when nobody got the lock again and it has no TTL', () => {
    const events: DemoEvent[] = [
      { t: 100, w: 'w0', type: 'acquired' },
      { t: 101, w: 'w0', type: 'crashed' },
      { t: 1000, w: 'w1', type: 'gave-up' },
    ];
    const stuck = analyze(events, { ...facts, scheme: 'no-ttl', fault: 'crash', counter: 0, lockPttl: -1 });
    assert.equal(stuck.stuck, true);
    assert.equal(stuck.recoveredAfterMs, null);
    assert.equal(verdict(stuck), 'DEADLOCK');
    const recovered = analyze([...events.slice(0, 2), { t: 401, w: 'w1', type: 'acquired' }, { t: 405, w: 'w1', type: 'written', ok: true }], {
      ...facts,
      scheme: 'same-value',
      fault: 'crash',
      counter: 1,
      lockPttl: -2,
    });
    assert.equal(recovered.stuck, false);
    assert.equal(recovered.recoveredAfterMs, 300);
  });

  it('counts refused stale writes and says fencing saved the day', () => {
    const r = analyze(
      [
        { t: 0, w: 'w0', type: 'acquired' },
        { t: 600, w: 'w0', type: 'written', ok: false },
        { t: 450, w: 'w1', type: 'acquired' },
        { t: 460, w: 'w1', type: 'written', ok: true },
      ],
      { ...facts, scheme: 'holdfast', counter: 1 },
    );
    assert.equal(r.staleRejected, 1);
    assert.equal(r.lostUpdates, 0);
    assert.equal(verdict(r), 'ok: fencing refused the stale holder');
  });

  it('overlapOf: touching spans do not overlap; three-way overlaps merge', () => {
    assert.deepEqual(overlapOf([{ start: 0, end: 10 }, { start: 10, end: 20 }]), []);
    assert.deepEqual(overlapOf([{ start: 0, end: 10 }, { start: 5, end: 20 }, { start: 8, end: 30 }]), [{ start: 5, end: 20 }]);
  });
});

describe('demo schemes against a real Redis', () => {
  let server: RedisServer;
  let redis: Redis;
  let transport: RedisTransport;
  let n = 0;

  before(async () => {
    server = await RedisServer.start();
    redis = new Redis(server.url, { maxRetriesPerRequest: 1 });
    transport = ioredisTransport(redis);
  });
  after(async () => {
    redis.disconnect();
    await server.stop();
  });

  function context(worker: string, keys: DemoKeys, extra: Partial<SchemeContext> = {}): SchemeContext {
    return { transport, keys, worker, leaseMs: 150, retryMs: 5, deadline: performance.timeOrigin + performance.now() + 3000, onGranted: () => {}, ...extra };
  }
  function keysOf(): DemoKeys {
    const p = `s${++n}:`;
    return { lock: `${p}lock`, audit: `${p}audit`, counter: `${p}counter`, fence: `${p}fence` };
  }

  /** A holds the lock; its release is slow (`delay`); meanwhile the lease ends and B takes the lock. */
  async function slowRelease(scheme: SchemeId) {
    const keys = keysOf();
    const a = await acquire(scheme, context('a', keys));
    assert.ok(a);
    const released = a.release(300);
    await sleep(200); // the 150 ms lease has run out
    const b = await acquire(scheme, context('b', keys, { leaseMs: 10_000 })); // b's lock outlives a's late release
    assert.ok(b);
    const outcome = await released;
    return { outcome, lockLeft: await redis.exists(keys.lock) };
  }

  it("same-value and get-then-del delete the next holder's lock on a slow release; lua-delete does not", async () => {
    assert.deepEqual(await slowRelease('same-value'), { outcome: 'deleted-other', lockLeft: 0 });
    assert.deepEqual(await slowRelease('get-then-del'), { outcome: 'deleted-other', lockLeft: 0 });
    assert.deepEqual(await slowRelease('lua-delete'), { outcome: 'expired', lockLeft: 1 });
  });

  it('setnx-expire: a crash between SETNX and EXPIRE leaves a lock that never expires; no-ttl never expires at all', async () => {
    for (const scheme of ['setnx-expire', 'no-ttl'] as const) {
      const keys = keysOf();
      await assert.rejects(
        acquire(scheme, context('a', keys, {
          onGranted: () => {
            throw new Error('crash');
          },
        })),
        /crash/,
      );
      assert.equal(await redis.pttl(keys.lock), -1, scheme);
    }
  });

  it("holdfast: the fenced counter refuses a stale holder, and its release never deletes another owner's lock", async () => {
    const keys = keysOf();
    const prefix = `hf${n}:`;
    const h1 = new Holdfast({ redis, prefix, watchdogLease: 1000 });
    const h2 = new Holdfast({ redis, prefix, watchdogLease: 1000 });
    try {
      const a = await acquire('holdfast', context('a', keys, { holdfast: h1 }));
      assert.ok(a);
      assert.equal(await a.read(), 0);
      await h1.lock('counter').forceUnlock(); // a's lock is gone (as after a pause past its lease)
      const b = await acquire('holdfast', context('b', keys, { holdfast: h2 }));
      assert.ok(b);
      assert.equal(await b.read(), 0);
      assert.equal(await a.write(1), false, 'the stale write is refused');
      assert.equal(await b.write(1), true);
      assert.equal(await a.read(), null, 'a stale read is refused too');
      assert.equal(await a.release(0), 'refused');
      assert.equal(await h2.lock('counter').isLocked(), true, "b's lock is intact");
      assert.equal(await b.release(0), 'released');
      assert.equal(await redis.get(keys.counter), '1');
    } finally {
      await h1.close();
      await h2.close();
    }
  });
});

describe('demo Redis', () => {
  it('starts a throwaway redis-server from PATH on a free port and removes it', async () => {
    const redis = await startThrowaway();
    try {
      assert.equal(redis.origin, 'throwaway');
      assert.equal(await redis.connection.transport.command(['PING']), 'PONG');
    } finally {
      await redis.connection.close();
      await redis.stop();
    }
    await assert.rejects(rawCommand(Number(new URL(redis.url).port), 'PING', 300));
  });
});

describe('holdfast demo (built CLI)', () => {
  let server: RedisServer;
  let out: string;
  before(async () => {
    await ensureBuilt();
    server = await RedisServer.start();
    out = mkdtempSync(join(tmpdir(), 'holdfast-demo-test-'));
  });
  after(async () => {
    await server.stop();
    rmSync(out, { recursive: true, force: true });
  });

  it('runs same-value and holdfast under a pause: same-value overlaps, holdfast loses no update; writes the table and the SVG', async () => {
    const r = await run(['demo', '--only', 'same-value,holdfast', '--only', 'pause', '--workers', '3', '--duration', '1500', '--json', '--out', out], {
      REDIS_URL: server.url,
    });
    assert.equal(r.code, 0, r.stderr);
    const report = JSON.parse(r.stdout) as { results: { scheme: string; fault: string; lostUpdates: number; deletedOthers: number; overlapMs: number; writes: number }[] };
    assert.deepEqual(report.results.map((x) => `${x.scheme}/${x.fault}`), ['same-value/pause', 'holdfast/pause']);
    const [sameValue, hf] = report.results as [(typeof report.results)[0], (typeof report.results)[0]];
    assert.ok(sameValue.overlapMs > 0, 'same-value: a paused holder and the next one overlap');
    assert.ok(hf.writes > 0);
    assert.equal(hf.lostUpdates, 0);
    assert.equal(hf.deletedOthers, 0);
    for (const f of ['demo-timeline.svg', 'demo-results.json', 'demo-table.md']) assert.ok(existsSync(join(out, f)), f);
    const svg = readFileSync(join(out, 'demo-timeline.svg'), 'utf8');
    assert.match(svg, /^<svg [^>]*xmlns="http:\/\/www\.w3\.org\/2000\/svg"/);
    assert.match(svg, /runs of 1\.5 s\)/, 'the title gives the runs\' length, not the axis\'');
    // no character that needs a font beyond the basics (CJK labels rendered as boxes without one)
    assert.deepEqual([...svg].filter((c) => c.codePointAt(0)! > 0x7f && !'·→—–'.includes(c)), []);
    // the demo deletes its keys
    const { Redis: R } = await import('ioredis');
    const c = new R(server.url);
    assert.deepEqual(await c.keys('holdfast-demo:*'), []);
    c.disconnect();
  });
});

describe('holdfast demo with no Redis anywhere (built CLI)', () => {
  let out: string;
  let bin: string;
  before(async () => {
    await ensureBuilt();
    out = mkdtempSync(join(tmpdir(), 'holdfast-demo-mem-'));
    // a PATH with node only: no redis-server to start
    bin = mkdtempSync(join(tmpdir(), 'holdfast-demo-path-'));
    symlinkSync(process.execPath, join(bin, 'node'));
  });
  after(() => {
    rmSync(out, { recursive: true, force: true });
    rmSync(bin, { recursive: true, force: true });
  });

  it('runs on the in-process backend, says so in its first line, and holdfast survives a crash', async () => {
    // port 1: nothing listens there (and never the Redis at 6379)
    const r = await run(['demo', '--only', 'holdfast,no-ttl', '--only', 'crash', '--workers', '2', '--duration', '1000', '--out', out], {
      PATH: bin,
      REDIS_URL: 'redis://127.0.0.1:1',
    }, undefined, 90_000);
    assert.equal(r.code, 0, r.stderr);
    const first = r.stdout.split('\n')[0] ?? '';
    assert.match(first, /on holdfast's in-process backend \(holdfast\/memory, no Redis at \$REDIS_URL and no redis-server on PATH\)/);
    assert.match(r.stdout, /holdfast\s+crash\s+.*\bok\b/);
    assert.match(r.stdout, /no-ttl\s+crash\s+.*DEADLOCK/, 'a naive scheme runs on it too, and shows its failure');
    assert.ok(existsSync(join(out, 'demo-timeline.svg')));
  });
});

/**
 * `holdfast dashboard` over HTTP (built CLI, real password-protected Redis): the URL on the first line, every kind of
 * primitive in the snapshot with fingerprints (never owner ids, permit ids or the password), the event stream,
 * read-only by default, force-unlock only with --allow-unlock and its header, the token for other addresses, the Host
 * check. The page in a real browser: test/cli/dashboard.browser.ts.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { Redis } from 'ioredis';
import { fingerprint, Holdfast } from '../../src/index.js';
import type { DashboardSnapshot } from '../../src/cli/dashboard.js';
import { ensureBuilt, run, sleep, until } from '../support/cli.js';
import { startDashboard } from '../support/dashboard.js';
import { rawCommand, RedisServer } from '../support/redis-server.js';

const PASSWORD = 'dash-s3cret';

describe('holdfast dashboard (built CLI, real Redis)', { timeout: 300_000 }, () => {
  let server: RedisServer;
  let redis: Redis;
  let holdfast: Holdfast;
  let env: NodeJS.ProcessEnv;

  before(async () => {
    await ensureBuilt();
    server = await RedisServer.start();
    assert.equal(await rawCommand(server.port, `CONFIG SET requirepass ${PASSWORD}`), '+OK');
    redis = new Redis(server.url, { password: PASSWORD, maxRetriesPerRequest: 1 });
    holdfast = new Holdfast({ redis, prefix: 'dash:' });
    env = { REDIS_URL: server.url, REDISCLI_AUTH: PASSWORD };
  });
  after(async () => {
    await holdfast.close();
    redis.disconnect();
    await server.stop();
  });

  it('shows every kind of primitive with fingerprints, never an owner id, a permit id or the password', async () => {
    const lock = await holdfast.lock('orders:42').acquire({ lease: 30_000 });
    const again = await holdfast.lock('orders:42').acquire({ owner: lock.owner, lease: 30_000 });
    const fair = await holdfast.fairLock('queue:1').acquire({ lease: 30_000 });
    const waiting = holdfast.fairLock('queue:1').acquire({ timeout: 20_000 });
    const rw = holdfast.readWriteLock('catalog');
    const r1 = await rw.readLock().acquire();
    const r2 = await rw.readLock().acquire();
    const sem = holdfast.semaphore('renderers');
    await sem.trySetPermits(3);
    const taken = await sem.acquire(2);
    const psem = holdfast.permitExpirableSemaphore('gpu');
    await psem.trySetPermits(4);
    const permit = await psem.acquire(3, { lease: 20_000 });
    await holdfast.countDownLatch('shards').trySetCount(5);
    const dash = await startDashboard(['--prefix', 'dash:', '--interval', '200'], env);
    try {
      await sleep(200); // the fair-lock waiter is queued
      const res = await fetch(new URL('/api/snapshot', dash.url));
      assert.equal(res.status, 200);
      const text = await res.text();
      const snap = JSON.parse(text) as DashboardSnapshot;
      assert.equal(snap.prefix, 'dash:');
      assert.equal(snap.allowUnlock, false);
      assert.equal(snap.truncated, false);
      const by = (kind: string, name: string) => snap.entries.find((e) => e.kind === kind && e.name === name);

      const l = by('lock', 'orders:42');
      assert.ok(l, text);
      assert.equal(l.holders[0]?.holder, fingerprint(lock.owner));
      assert.equal(l.holders[0]?.holdCount, 2);
      assert.equal(l.token, lock.token);
      assert.ok((l.remainingTtl as number) > 20_000 && (l.remainingTtl as number) <= 30_000, String(l.remainingTtl));

      const f = by('fair-lock', 'queue:1');
      assert.ok(f, text);
      assert.equal(f.holders[0]?.holder, fingerprint(fair.owner));
      assert.equal(f.token, fair.token);
      assert.equal(f.waiters, 1);
      assert.equal(f.queue.length, 1);
      assert.match(f.queue[0]!.holder, /^[0-9a-f]{12}$/);

      const c = by('read-write-lock', 'catalog');
      assert.ok(c, text);
      assert.equal(c.holders.filter((h) => h.side === 'write').length, 0);
      assert.deepEqual(c.holders.map((r) => [r.side, r.holder]).sort(), [['read', fingerprint(r1.owner)], ['read', fingerprint(r2.owner)]].sort());
      assert.ok(c.holders.every((r) => (r.remainingTtl ?? 0) > 0));

      assert.equal(by('semaphore', 'renderers')?.available, 1);
      const g = by('permit-semaphore', 'gpu');
      assert.ok(g, text);
      assert.equal(g.available, 1);
      assert.equal(g.acquired, 3);
      const [lease] = g.holders;
      assert.equal(lease?.holder, fingerprint(permit.id));
      assert.equal(lease.permits, 3);
      assert.ok(lease.remainingTtl !== null && lease.remainingTtl > 10_000 && lease.remainingTtl <= 20_000, String(lease.remainingTtl));
      assert.equal(by('latch', 'shards')?.count, 5);

      const page = await (await fetch(dash.url)).text();
      const script = await (await fetch(new URL('/app.js', dash.url))).text();
      for (const secret of [lock.owner, fair.owner, r1.owner, r2.owner, permit.id, PASSWORD]) {
        assert.ok(!text.includes(secret) && !page.includes(secret) && !script.includes(secret), `the dashboard shows a secret: ${secret}`);
      }
      // read-only: the dashboard wrote nothing (the keys are as the test left them)
      assert.equal(by('lock', 'orders:42')?.holders[0]?.holdCount, 2);
    } finally {
      await dash.stop();
      await again.release();
      await lock.release();
      await fair.release();
      await (await waiting).release();
      await r1.release();
      await r2.release();
      await taken.release();
      await permit.release();
      await holdfast.countDownLatch('shards').delete();
    }
    const log = dash.proc;
    const result = await log.done;
    assert.ok(!result.stdout.includes(PASSWORD) && !result.stderr.includes(PASSWORD), 'the output never shows the password');
  });

  it('streams server-sent events; a released lock leaves the next update', async () => {
    const dash = await startDashboard(['--prefix', 'dash:', '--interval', '150'], env);
    const held = await holdfast.lock('stream:1').acquire({ lease: 10_000 });
    const controller = new AbortController();
    try {
      const res = await fetch(new URL('/events', dash.url), { signal: controller.signal });
      assert.equal(res.headers.get('content-type'), 'text/event-stream');
      const reader = res.body!.getReader();
      const decoder = new TextDecoder();
      let buffer = '';
      const next = async (): Promise<DashboardSnapshot> => {
        for (;;) {
          const end = buffer.indexOf('\n\n');
          if (end >= 0) {
            const event = buffer.slice(0, end);
            buffer = buffer.slice(end + 2);
            const data = event.split('\n').find((l) => l.startsWith('data: '));
            if (data) return JSON.parse(data.slice(6)) as DashboardSnapshot;
            continue;
          }
          const { value, done } = await reader.read();
          if (done) throw new Error('the stream ended');
          buffer += decoder.decode(value, { stream: true });
        }
      };
      const first = await next();
      assert.ok(first.entries.some((e) => e.name === 'stream:1'), JSON.stringify(first));
      const ttl = (s: DashboardSnapshot) => (s.entries.find((e) => e.name === 'stream:1') as { remainingTtl: number }).remainingTtl;
      // two snapshots can be read in the same millisecond (the one sent on connect and the first tick, on a busy
      // machine): the next one that differs must show less time left, never more (a fixed lease, no renewal)
      let second = await next();
      for (let i = 0; i < 10 && ttl(second) === ttl(first); i++) second = await next();
      assert.ok(ttl(second) < ttl(first), `the lease shrinks: ${ttl(first)} → ${ttl(second)}`);
      await held.release();
      let gone = false;
      for (let i = 0; i < 10 && !gone; i++) gone = !(await next()).entries.some((e) => e.name === 'stream:1');
      assert.ok(gone, 'the released lock left the stream');
    } finally {
      controller.abort();
      await held.release();
      await dash.stop();
    }
  });

  it("a plain lock's waiters, how long it has been held, its holder's label; run-once jobs", async () => {
    const labelled = new Holdfast({ redis, prefix: 'dash:', label: 'worker-7:4242' });
    const held = await labelled.lock('busy').acquire({ lease: 60_000 });
    // two waiters of two clients (a client's second waiter may queue behind its first in the process, off the server's list)
    const second = new Holdfast({ redis, prefix: 'dash:' });
    const started = Date.now();
    const log: string[] = [];
    const wait = (client: Holdfast, who: string) =>
      client
        .lock('busy')
        .acquire({ timeout: 90_000 })
        .then(
          (h) => (log.push(`${who} granted at ${Date.now() - started} ms`), h),
          (error: unknown) => {
            log.push(`${who} failed at ${Date.now() - started} ms: ${String(error)}`);
            throw error;
          },
        );
    const waiting = [wait(holdfast, 'first waiter'), wait(second, 'second waiter')];
    const scheduler = labelled.scheduler({ onError: () => {} });
    const claim = await scheduler.claim('nightly', Date.UTC(2030, 0, 1), { lockAtMostFor: 30_000, schedule: '0 3 * * *' });
    assert.ok(claim);
    const dash = await startDashboard(['--prefix', 'dash:', '--interval', '200'], env);
    let refused: { released: number; reason: unknown } | undefined;
    try {
      const snapshot = async () => (await (await fetch(new URL('/api/snapshot', dash.url))).json()) as DashboardSnapshot;
      let busy: DashboardSnapshot['entries'][number] | undefined;
      await until(async () => (busy = (await snapshot()).entries.find((e) => e.name === 'busy'))?.waiters === 2, 20_000).catch(async (error: unknown) => {
        const waiters = await redis.zrange(holdfast.core.keys.lockWaiters('busy'), '0', '-1', 'WITHSCORES');
        throw new Error(`the dashboard did not list two waiters: ${JSON.stringify(busy)}; in Redis: ${JSON.stringify(waiters)}; ${log.join('; ')}`, { cause: error });
      });
      const first = (await snapshot()).entries.find((e) => e.kind === 'lock' && e.name === 'busy')!;
      assert.equal(first.holders[0]?.holder, fingerprint(held.owner));
      assert.equal(first.holders[0]?.label, 'worker-7:4242');
      assert.equal(first.holders[0]?.heldForAtLeast, true, 'held before the dashboard first looked: "at least"');
      assert.equal(first.queue.length, 2);
      assert.ok(first.queue.every((w) => typeof w.waitedMs === 'number' && w.holder.length === 12));
      await sleep(300);
      const later = (await snapshot()).entries.find((e) => e.kind === 'lock' && e.name === 'busy')!;
      assert.ok(later.holders[0]!.heldForMs >= first.holders[0].heldForMs + 250, `${first.holders[0].heldForMs} → ${later.holders[0]!.heldForMs}`);

      const job = (await snapshot()).entries.find((e) => e.kind === 'job' && e.name === 'nightly');
      assert.ok(job, 'the run-once job has a card');
      assert.equal(job.held, true);
      assert.equal(job.job?.runningOn, scheduler.fingerprint);
      assert.equal(job.job?.schedule, '0 3 * * *');
      assert.equal(job.job?.runningOnLabel, 'worker-7:4242');
      const text = JSON.stringify(await snapshot());
      assert.ok(!text.includes(held.owner) && !text.includes(labelled.core.clientId) && !text.includes(holdfast.core.clientId), 'no owner id, no client id');
    } finally {
      await dash.stop();
      await held.release();
      // both waiters get the lock in turn once it is released; a failure above is the one reported
      const released = Date.now() - started;
      const outcomes = await Promise.allSettled(waiting.map(async (w) => (await w).release()));
      await claim.finish();
      await scheduler.stop();
      await labelled.close();
      await second.close();
      const failure = outcomes.find((o) => o.status === 'rejected');
      if (failure) refused = { released, reason: failure.reason };
    }
    if (refused) throw new Error(`a waiter did not get the lock released at ${refused.released} ms: ${log.join('; ')}`, { cause: refused.reason });
  });

  it('says Redis cannot be reached instead of "nothing held"', async () => {
    const other = await RedisServer.start();
    const dash = await startDashboard(['--prefix', 'dash:', '--interval', '100', '--url', other.url], {});
    try {
      const ok = (await (await fetch(new URL('/api/snapshot', dash.url))).json()) as DashboardSnapshot;
      assert.equal(ok.error, undefined);
      await other.stop();
      let snap: DashboardSnapshot | undefined;
      await until(async () => (snap = (await (await fetch(new URL('/api/snapshot', dash.url))).json()) as DashboardSnapshot).error !== undefined, 20_000);
      assert.match(snap!.error!, new RegExp(`^cannot reach .*127\\.0\\.0\\.1:${new URL(other.url).port}`));
      assert.deepEqual(snap!.entries, []);
      const script = await (await fetch(new URL('/app.js', dash.url))).text();
      assert.match(script, /Cannot tell what is held: /, 'the page says why it shows nothing');
    } finally {
      dash.proc.child.kill('SIGTERM');
      const killer = setTimeout(() => dash.proc.child.kill('SIGKILL'), 10_000); // closing may wait for the dead server
      await dash.proc.done;
      clearTimeout(killer);
    }
  });

  it('is read-only unless --allow-unlock; force-unlock needs its header; a foreign Host is refused', async () => {
    const held = await holdfast.lock('stuck').acquire({ lease: 30_000 });
    const ro = await startDashboard(['--prefix', 'dash:'], env);
    try {
      const res = await fetch(new URL('/api/unlock', ro.url), {
        method: 'POST',
        headers: { 'Content-Type': 'application/json', 'X-Holdfast-Dashboard': 'unlock' },
        body: JSON.stringify({ kind: 'lock', name: 'stuck' }),
      });
      assert.equal(res.status, 403);
      assert.equal(await holdfast.lock('stuck').isLocked(), true);
      const port = new URL(ro.url).port;
      const foreign = await rawHttp(Number(port), 'GET /api/snapshot HTTP/1.1\r\nHost: evil.example:80\r\nConnection: close\r\n\r\n');
      assert.match(foreign, /^HTTP\/1\.1 421/);
    } finally {
      await ro.stop();
    }
    const rw = await startDashboard(['--prefix', 'dash:', '--allow-unlock'], env);
    try {
      const unlock = (headers: Record<string, string>) =>
        fetch(new URL('/api/unlock', rw.url), { method: 'POST', headers: { 'Content-Type': 'application/json', ...headers }, body: JSON.stringify({ kind: 'lock', name: 'stuck' }) });
      assert.equal((await unlock({})).status, 400, 'no header: refused');
      assert.equal((await unlock({ 'X-Holdfast-Dashboard': 'unlock', Origin: 'http://evil.example' })).status, 403, 'another origin: refused');
      assert.equal(await holdfast.lock('stuck').isLocked(), true);
      const ok = await unlock({ 'X-Holdfast-Dashboard': 'unlock' });
      assert.equal(ok.status, 200);
      assert.deepEqual(await ok.json(), { kind: 'lock', name: 'stuck', unlocked: true });
      assert.equal(await holdfast.lock('stuck').isLocked(), false);
      // every kind the registry can force: a read-write lock's readers; a counting semaphore cannot be forced
      const reader = await holdfast.readWriteLock('shelf').readLock().acquire({ lease: 30_000 });
      const post = (body: object) =>
        fetch(new URL('/api/unlock', rw.url), { method: 'POST', headers: { 'Content-Type': 'application/json', 'X-Holdfast-Dashboard': 'unlock' }, body: JSON.stringify(body) });
      assert.deepEqual(await (await post({ kind: 'read-write-lock', name: 'shelf' })).json(), { kind: 'read-write-lock', name: 'shelf', unlocked: true });
      await assert.rejects(reader.release(), { code: 'LOCK_NOT_HELD' });
      const refused = await post({ kind: 'semaphore', name: 'shelf' });
      assert.equal(refused.status, 400);
      assert.match(await refused.text(), /"read-write-lock"/);
    } finally {
      await rw.stop();
      await held.release().catch(() => {});
    }
  });

  it('any address but loopback needs a token; with a token, every request must carry it', async () => {
    const refused = await run(['dashboard', '--host', '0.0.0.0', '--port', '0'], env);
    assert.equal(refused.code, 64, refused.stderr);
    assert.match(refused.stderr, /--token/);
    const dash = await startDashboard(['--prefix', 'dash:', '--token', 'tok-123'], env);
    try {
      assert.ok(dash.url.endsWith('?token=tok-123'), dash.url);
      const bare = new URL(dash.url);
      bare.search = '';
      assert.equal((await fetch(bare)).status, 401);
      assert.equal((await fetch(new URL('/api/snapshot', bare))).status, 401);
      assert.equal((await fetch(new URL('/api/snapshot?token=wrong', bare))).status, 401);
      assert.equal((await fetch(dash.url)).status, 200);
      assert.equal((await fetch(new URL('/api/snapshot?token=tok-123', bare))).status, 200);
    } finally {
      await dash.stop();
    }
  });

  it('stops the SCAN at --max-keys and says so', async () => {
    const many = await Promise.all(Array.from({ length: 30 }, (_, i) => holdfast.lock(`bulk:${i}`).acquire({ lease: 30_000 })));
    const dash = await startDashboard(['--prefix', 'dash:', '--max-keys', '5'], env);
    try {
      const snap = (await (await fetch(new URL('/api/snapshot', dash.url))).json()) as DashboardSnapshot;
      assert.equal(snap.truncated, true);
      assert.ok(snap.scanned < 60, `scanned ${snap.scanned}`);
      assert.ok(snap.entries.length < 30, `${snap.entries.length} entries`);
    } finally {
      await dash.stop();
      await Promise.all(many.map((h) => h.release()));
    }
  });
});

/** One raw HTTP exchange (to send a Host header fetch would not). */
async function rawHttp(port: number, request: string): Promise<string> {
  const { connect } = await import('node:net');
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1', () => socket.end(request));
    let reply = '';
    socket.on('data', (c: Buffer) => (reply += c.toString()));
    socket.on('end', () => resolve(reply));
    socket.on('error', reject);
  });
}

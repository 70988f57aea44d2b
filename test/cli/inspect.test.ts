 
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { Redis } from 'ioredis';
import { Holdfast } from '../../src/index.js';
import { hostname } from 'node:os';
import { ensureBuilt, run, start, until } from '../support/cli.js';
import { fingerprint } from '../../src/index.js';
import type { LockView } from '../../src/cli/inspect.js';
import { rawCommand, RedisServer } from '../support/redis-server.js';

const VIEW_KEYS = ['name', 'kind', 'held', 'owner', 'label', 'holdCount', 'token', 'remainingTtl', 'lastToken', 'waiters', 'holders', 'queue'].sort();

describe('holdfast inspect / list / unlock (built CLI, real Redis)', { timeout: 300_000 }, () => {
  let server: RedisServer;
  let redis: Redis;
  let holdfast: Holdfast;
  let env: NodeJS.ProcessEnv;

  before(async () => {
    await ensureBuilt();
    // a password-protected server: the CLI gets the password from the environment only
    server = await RedisServer.start();
    assert.equal(await rawCommand(server.port, 'CONFIG SET requirepass s3cret'), '+OK');
    redis = new Redis(server.url, { password: 's3cret', maxRetriesPerRequest: 1 });
    holdfast = new Holdfast({ redis, prefix: 'app:' });
    env = { REDIS_URL: server.url, REDISCLI_AUTH: 's3cret' };
  });
  after(async () => {
    await holdfast.close();
    redis.disconnect();
    await server.stop();
  });

  it('inspect shows owner, hold count, TTL and token, as a table and as JSON', async () => {
    const held = await holdfast.lock('orders:42').acquire({ lease: 20_000 });
    const again = await holdfast.lock('orders:42').acquire({ owner: held.owner, lease: 20_000 });
    try {
      const text = await run(['inspect', '--prefix', 'app:', 'orders:42'], env);
      assert.equal(text.code, 0, text.stderr);
      const [header, row] = text.stdout.trim().split('\n');
      assert.match(header!, /^NAME\s+KIND\s+OWNER\s+LABEL\s+HOLDS\s+TTL\s+TOKEN\s+LAST TOKEN\s+WAITERS\s+DETAIL$/);
      assert.ok(row!.startsWith('orders:42'), row);
      assert.ok(row!.includes(held.owner), row);

      const json = await run(['inspect', '--prefix', 'app:', '--json', 'orders:42'], env);
      const view = JSON.parse(json.stdout) as Record<string, unknown>;
      assert.deepEqual(Object.keys(view).sort(), VIEW_KEYS);
      assert.equal(view.held, true);
      assert.equal(view.kind, 'lock');
      assert.equal(view.owner, held.owner);
      assert.equal(view.holdCount, 2);
      assert.equal(view.token, held.token);
      assert.equal(view.lastToken, held.token);
      assert.equal(view.waiters, 0);
      assert.ok(typeof view.remainingTtl === 'number' && view.remainingTtl > 0 && view.remainingTtl <= 20_000, String(view.remainingTtl));
    } finally {
      await again.release();
      await held.release();
    }
    const free = await run(['inspect', '--prefix', 'app:', 'orders:42'], env);
    assert.equal(free.stdout.trim(), `"orders:42" is free (last token ${(await holdfast.lock('orders:42').inspect()).lastToken})`);
    const freeJson = JSON.parse((await run(['inspect', '--prefix', 'app:', '--json', 'orders:42'], env)).stdout) as Record<string, unknown>;
    assert.equal(freeJson.held, false);
    assert.equal(freeJson.owner, null);
    assert.equal(freeJson.remainingTtl, null);
  });

  it('list finds held locks by SCAN, filters with --match, and stays inside --prefix', async () => {
    const a = await holdfast.lock('orders:1').acquire();
    const b = await holdfast.lock('orders:2').acquire();
    const c = await holdfast.lock('users:7').acquire();
    const other = new Holdfast({ redis, prefix: 'other:' });
    const d = await other.lock('orders:3').acquire();
    try {
      const all = JSON.parse((await run(['list', '--prefix', 'app:', '--json'], env)).stdout) as { name: string; held: boolean }[];
      assert.deepEqual(all.map((v) => v.name).sort(), ['orders:1', 'orders:2', 'users:7']);
      assert.ok(all.every((v) => v.held));
      const orders = JSON.parse((await run(['list', '--prefix', 'app:', '--match', 'orders:*', '--json'], env)).stdout) as { name: string }[];
      assert.deepEqual(orders.map((v) => v.name), ['orders:1', 'orders:2']);
      const text = await run(['list', '--prefix', 'app:'], env);
      assert.equal(text.stdout.trim().split('\n').length, 4, text.stdout);
      const none = await run(['list', '--prefix', 'nothing-here:'], env);
      assert.equal(none.stdout.trim(), 'no locks held');
    } finally {
      await Promise.all([a.release(), b.release(), c.release(), d.release()]);
      await other.close();
    }
  });

  it('unlock needs --force, deletes whoever holds the lock, and exits 1 when there was none', async () => {
    const held = await holdfast.lock('stuck').acquire();
    const refused = await run(['unlock', '--prefix', 'app:', 'stuck'], env);
    assert.equal(refused.code, 64);
    assert.equal(await holdfast.lock('stuck').isLocked(), true);

    const done = await run(['unlock', '--prefix', 'app:', '--force', '--json', 'stuck'], env);
    assert.equal(done.code, 0, done.stderr);
    const reply = JSON.parse(done.stdout) as { name: string; unlocked: boolean; was: { owner: string; token: number } };
    assert.equal(reply.name, 'stuck');
    assert.equal(reply.unlocked, true);
    assert.equal(reply.was.owner, held.owner);
    assert.equal(reply.was.token, held.token);
    assert.equal(await holdfast.lock('stuck').isLocked(), false);
    await assert.rejects(held.release(), { code: 'LOCK_NOT_HELD' });

    const again = await run(['unlock', '--prefix', 'app:', '--force', 'stuck'], env);
    assert.equal(again.code, 1);
    assert.equal(again.stdout.trim(), '"stuck" was not locked');
  });

  /** `inspect --json <name>`: the one view, or the views of every kind held under it. */
  async function inspectJson(name: string): Promise<LockView[]> {
    const r = await run(['inspect', '--prefix', 'app:', '--json', name], env);
    assert.equal(r.code, 0, r.stderr);
    const parsed = JSON.parse(r.stdout) as LockView | LockView[];
    return (Array.isArray(parsed) ? parsed : [parsed]).filter((v) => v.held || (v.waiters ?? 0) > 0 || v.available !== undefined);
  }

  it('a plain lock: its waiters, longest waiting first, with how long they waited', async () => {
    const held = await holdfast.lock('queue:1').acquire({ lease: 20_000 });
    const waiting = [holdfast.lock('queue:1').acquire({ timeout: 20_000 }), holdfast.lock('queue:1').acquire({ timeout: 20_000 })];
    try {
      await until(async () => (await inspectJson('queue:1'))[0]?.waiters === 2);
      const [view] = await inspectJson('queue:1');
      assert.equal(view!.kind, 'lock');
      assert.equal(view!.owner, held.owner);
      assert.equal(view!.queue.length, 2);
      assert.ok(view!.queue.every((w) => typeof w.waitedMs === 'number' && w.waitedMs >= 0));
      assert.ok(view!.queue.every((w) => w.fingerprint === fingerprint(w.owner)));
    } finally {
      await held.release();
      for (const w of waiting) await (await w).release();
    }
  });

  it('a fair lock with 3 waiters is held, shows its queue, and unlock --force hands it to the head', async () => {
    const held = await holdfast.fairLock('payouts').acquire({ lease: 20_000 });
    const waiters = [1, 2, 3].map(() => holdfast.fairLock('payouts').acquire({ timeout: 20_000 }));
    try {
      await until(async () => (await inspectJson('payouts'))[0]?.waiters === 3);
      const [view] = await inspectJson('payouts');
      assert.equal(view!.kind, 'fair-lock');
      assert.equal(view!.held, true);
      assert.equal(view!.owner, held.owner);
      assert.equal(view!.queue.length, 3);
      const listed = JSON.parse((await run(['list', '--prefix', 'app:', '--json', '--match', 'payouts'], env)).stdout) as LockView[];
      assert.deepEqual(listed.map((v) => [v.name, v.kind, v.waiters]), [['payouts', 'fair-lock', 3]]);

      const forced = await run(['unlock', '--prefix', 'app:', '--force', 'payouts'], env);
      assert.equal(forced.code, 0, forced.stderr);
      assert.match(forced.stdout, new RegExp(`^unlocked "payouts" \\(fair-lock, was held by ${held.owner}`));
      const next = await waiters[0]!; // the head of the queue gets it
      assert.notEqual(next.owner, held.owner);
      await assert.rejects(held.release(), { code: 'LOCK_NOT_HELD' });
      await next.release();
    } finally {
      for (const w of waiters) await (await w).release().catch(() => {});
    }
  });

  it('a read-write lock with 2 readers is held; unlock --force frees both and lets a writer in', async () => {
    const rw = holdfast.readWriteLock('ledger');
    const [r1, r2] = [await rw.readLock().acquire({ lease: 20_000 }), await rw.readLock().acquire({ lease: 20_000 })];
    const [view] = await inspectJson('ledger');
    assert.equal(view!.kind, 'read-write-lock');
    assert.equal(view!.held, true);
    assert.deepEqual(view!.holders.map((h) => [h.side, h.owner, h.fingerprint]).sort(), [
      ['read', r1.owner, r1.fingerprint],
      ['read', r2.owner, r2.fingerprint],
    ].sort());
    const text = await run(['inspect', '--prefix', 'app:', 'ledger'], env);
    assert.equal(text.stdout.trim().split('\n').length, 3, text.stdout); // a header and a row per reader
    const writer = rw.writeLock().acquire({ timeout: 20_000 });
    const forced = await run(['unlock', '--prefix', 'app:', '--force', 'ledger'], env);
    assert.equal(forced.code, 0, forced.stderr);
    await (await writer).release();
    await assert.rejects(r1.release(), { code: 'LOCK_NOT_HELD' });
    await assert.rejects(r2.release(), { code: 'LOCK_NOT_HELD' });
  });

  it('an expirable-permit semaphore with permits taken is held; unlock --force gives them back and wakes a waiter', async () => {
    const sem = holdfast.permitExpirableSemaphore('gpus');
    await sem.trySetPermits(3);
    const permit = await sem.acquire(2, { lease: 20_000 });
    const [view] = await inspectJson('gpus');
    assert.equal(view!.kind, 'permit-semaphore');
    assert.equal(view!.held, true);
    assert.deepEqual([view!.available, view!.acquired], [1, 2]);
    assert.deepEqual(view!.holders.map((h) => [h.owner, h.permits, h.fingerprint]), [[permit.id, 2, fingerprint(permit.id)]]);
    const waiter = sem.acquire(3, { timeout: 20_000 });
    const forced = await run(['unlock', '--prefix', 'app:', '--force', 'gpus'], env);
    assert.equal(forced.code, 0, forced.stderr);
    const all = await waiter;
    assert.equal(all.permits, 3);
    await all.release();
    await assert.rejects(permit.release(), { code: 'LOCK_NOT_HELD' });
    assert.equal(await sem.availablePermits(), 3);
  });

  it('a counting semaphore shows its free permits; unlock --force says it cannot be forced', async () => {
    const sem = holdfast.semaphore('pdf');
    await sem.trySetPermits(2);
    const taken = await sem.acquire(1);
    try {
      const [view] = await inspectJson('pdf');
      assert.deepEqual([view!.kind, view!.available], ['semaphore', 1]);
      const forced = await run(['unlock', '--prefix', 'app:', '--force', 'pdf'], env);
      assert.equal(forced.code, 1);
      assert.match(forced.stdout, /not freed: semaphore: a counting semaphore does not record who took its permits/);
    } finally {
      await taken.release();
    }
  });

  it('a latch shows its count; unlock --force opens it and wakes its waiters', async () => {
    const latch = holdfast.countDownLatch('boot');
    await latch.trySetCount(2);
    const [view] = await inspectJson('boot');
    assert.deepEqual([view!.kind, view!.held, view!.count], ['latch', true, 2]);
    const opened = latch.await({ timeout: 20_000 });
    const forced = await run(['unlock', '--prefix', 'app:', '--force', 'boot'], env);
    assert.equal(forced.code, 0, forced.stderr);
    assert.equal(await opened, true);
  });

  it('a run-once job in progress is held; unlock --force drops its claim so the next tick can run', async () => {
    const scheduler = holdfast.scheduler({ onError: () => {} });
    const tick = Date.UTC(2030, 0, 1);
    const claim = await scheduler.claim('nightly', tick, { lockAtMostFor: 30_000 });
    assert.ok(claim);
    try {
      const [view] = await inspectJson('nightly');
      assert.deepEqual([view!.kind, view!.held], ['job', true]);
      assert.ok(view!.remainingTtl !== null && view!.remainingTtl > 25_000, String(view!.remainingTtl));
      assert.equal(await scheduler.claim('nightly', tick + 1000, { lockAtMostFor: 30_000 }), null, 'locked while the run holds it');
      const forced = await run(['unlock', '--prefix', 'app:', '--force', 'nightly'], env);
      assert.equal(forced.code, 0, forced.stderr);
      const next = await scheduler.claim('nightly', tick + 1000, { lockAtMostFor: 30_000 });
      assert.ok(next, 'the next tick is claimed once the claim was dropped');
      await next.finish();
      assert.ok((await redis.pttl(holdfast.core.keys.job('nightly'))) > 0, 'the record keeps its TTL');
    } finally {
      await claim.finish();
      await scheduler.stop();
    }
  });

  it('an election shows its leader (label, term) and candidates; unlock --force deposes the leader and the next candidate leads', async () => {
    const other = new Holdfast({ redis, prefix: 'app:' });
    try {
      const leadership = await holdfast.election('ingest', { label: 'node-a' }).campaign({ lease: 20_000 });
      const next = other.election('ingest', { label: 'node-b' }).campaign({ lease: 20_000, timeout: 30_000 });
      await until(async () => (await inspectJson('ingest'))[0]?.waiters === 1);
      const [view] = await inspectJson('ingest');
      assert.deepEqual([view!.kind, view!.held, view!.token, view!.label], ['election', true, leadership.term, 'node-a']);
      assert.deepEqual(view!.queue.map((c) => c.label), ['node-b']);
      const text = await run(['inspect', '--prefix', 'app:', 'ingest'], env);
      assert.match(text.stdout, /ingest\s+election\s/);
      const forced = await run(['unlock', '--prefix', 'app:', '--force', 'ingest'], env);
      assert.equal(forced.code, 0, forced.stderr);
      const successor = await next;
      assert.ok(successor.term > leadership.term, `${successor.term} > ${leadership.term}`);
      await successor.resign();
      await leadership.resign().catch(() => {});
    } finally {
      await other.close();
    }
  });

  it('list shows every kind held under the prefix', async () => {
    const lock = await holdfast.lock('k:lock').acquire();
    const fair = await holdfast.fairLock('k:fair').acquire();
    const read = await holdfast.readWriteLock('k:rw').readLock().acquire();
    await holdfast.permitExpirableSemaphore('k:psem').trySetPermits(2);
    const permit = await holdfast.permitExpirableSemaphore('k:psem').acquire(1);
    await holdfast.semaphore('k:sem').trySetPermits(2);
    await holdfast.countDownLatch('k:latch').trySetCount(1);
    try {
      const listed = JSON.parse((await run(['list', '--prefix', 'app:', '--json', '--match', 'k:*'], env)).stdout) as LockView[];
      assert.deepEqual(listed.map((v) => [v.kind, v.name]), [
        ['lock', 'k:lock'],
        ['fair-lock', 'k:fair'],
        ['read-write-lock', 'k:rw'],
        ['permit-semaphore', 'k:psem'],
        ['semaphore', 'k:sem'],
        ['latch', 'k:latch'],
      ]);
    } finally {
      await Promise.all([lock.release(), fair.release(), read.release(), permit.release()]);
      await holdfast.semaphore('k:sem').delete();
      await holdfast.countDownLatch('k:latch').delete();
    }
  });

  it('a lock held by holdfast exec shows its host and pid as its label', async () => {
    const exec = start(['exec', '--prefix', 'app:', 'cron:backup', '--', process.execPath, '-e', 'setTimeout(() => {}, 20000)'], env);
    try {
      await until(async () => (await inspectJson('cron:backup'))[0]?.held === true, 15_000);
      const [view] = await inspectJson('cron:backup');
      assert.equal(view!.label, `${hostname()}:${exec.child.pid}`);
    } finally {
      exec.child.kill('SIGTERM');
      await exec.done;
    }
  });

  it('reads the password from the environment and never echoes it', async () => {
    const noAuth = await run(['list'], { REDIS_URL: server.url });
    assert.equal(noAuth.code, 69);
    assert.equal(noAuth.stderr.trim().split('\n').length, 1, noAuth.stderr);
    const viaHoldfastVar = await run(['list'], { REDIS_URL: server.url, HOLDFAST_PASSWORD: 's3cret' });
    assert.equal(viaHoldfastVar.code, 0, viaHoldfastVar.stderr);
    const inUrl = await run(['list', '--url', `redis://:wrong@127.0.0.1:${server.port}`], {});
    assert.equal(inUrl.code, 69);
    assert.doesNotMatch(inUrl.stderr, /wrong/);
  });

  it('has --help with examples for every command', async () => {
    for (const command of ['exec', 'inspect', 'list', 'unlock', 'demo']) {
      const r = await run([command, '--help'], {});
      assert.equal(r.code, 0, command);
      assert.match(r.stdout, new RegExp(`^Usage: holdfast ${command}`), command);
      assert.match(r.stdout, /Examples:/, command);
    }
    const top = await run(['--help'], {});
    assert.match(top.stdout, /Commands:/);
  });
});

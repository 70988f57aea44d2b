 
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { Redis } from 'ioredis';
import { Holdfast } from '../../src/index.js';
import { ensureBuilt, run, start, until } from '../support/cli.js';
import { freePort, RedisServer } from '../support/redis-server.js';

describe('holdfast exec (built CLI, real Redis)', { timeout: 300_000 }, () => {
  let server: RedisServer;
  let redis: Redis;
  let holdfast: Holdfast;
  let env: NodeJS.ProcessEnv;
  let dir: string;

  before(async () => {
    await ensureBuilt();
    server = await RedisServer.start();
    redis = new Redis(server.url, { maxRetriesPerRequest: 1 });
    holdfast = new Holdfast({ redis });
    env = { REDIS_URL: server.url };
    dir = mkdtempSync(join(tmpdir(), 'holdfast-cli-'));
  });
  after(async () => {
    await holdfast.close();
    redis.disconnect();
    await server.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  it('never lets two commands under one lock interleave', async () => {
    const file = join(dir, 'mutex.log');
    const script = `for i in 1 2 3; do echo "$ID begin" >> ${file}; sleep 0.05; echo "$ID end" >> ${file}; done`;
    const runs = ['a', 'b', 'c'].map((id) => run(['exec', 'mutex', '--', 'sh', '-c', script], { ...env, ID: id }));
    const results = await Promise.all(runs);
    for (const r of results) assert.equal(r.code, 0, r.stderr);
    const lines = readFileSync(file, 'utf8').trim().split('\n');
    assert.equal(lines.length, 18);
    // each command's three begin/end pairs come as one block: no other command's line in between
    for (let i = 0; i < lines.length; i += 6) {
      const id = lines[i]!.split(' ')[0];
      assert.deepEqual(lines.slice(i, i + 6), [1, 2, 3].flatMap(() => [`${id} begin`, `${id} end`]), lines.join('\n'));
    }
    assert.equal(await holdfast.lock('mutex').isLocked(), false);
  });

  it("passes the lock name and a fencing token that grows, and exits with the command's code", async () => {
    const first = await run(['exec', 'tok', '--', 'sh', '-c', 'echo "$HOLDFAST_LOCK $HOLDFAST_TOKEN"; exit 3'], env);
    assert.equal(first.code, 3);
    const second = await run(['exec', 'tok', '--', 'sh', '-c', 'echo "$HOLDFAST_LOCK $HOLDFAST_TOKEN"'], env);
    assert.equal(second.code, 0);
    const [name1, token1] = first.stdout.trim().split(' ');
    const [, token2] = second.stdout.trim().split(' ');
    assert.equal(name1, 'tok');
    assert.ok(Number(token2) > Number(token1), `${token2} > ${token1}`);
  });

  it('exits 75 when --wait runs out, 127 for a missing command, 64 for a bad command line', async () => {
    const held = await holdfast.lock('busy').acquire();
    try {
      const r = await run(['exec', '--wait', '200ms', 'busy', '--', 'true'], env);
      assert.equal(r.code, 75);
      assert.match(r.stderr, /^holdfast: timed out after 200 ms waiting for lock "busy"\n$/);
    } finally {
      await held.release();
    }
    const missing = await run(['exec', 'x', '--', 'no-such-command-holdfast'], env);
    assert.equal(missing.code, 127);
    assert.match(missing.stderr, /command not found/);
    for (const args of [
      ['exec', 'x'],
      ['exec', '--', 'true'],
      ['exec', 'x', 'true'],
      ['exec', '--lease', '5', 'x', '--', 'true'],
      ['exec', '--nope', 'x', '--', 'true'],
      ['exec', '--wait', '-1', 'x', '--', 'true'],
      ['exec', '--wait'],
      ['exec', '-w', '3 weeks', 'x', '--', 'true'],
      ['exec', '-n', '-w', '1s', 'x', '--', 'true'],
      ['exec', '-E', '256', 'x', '--', 'true'],
    ]) {
      const bad = await run(args, env);
      assert.equal(bad.code, 64, `${args.join(' ')}: ${bad.stderr}`);
      assert.equal(bad.stderr.trim().split('\n').length, 1, bad.stderr);
    }
  });

  it('takes durations with units (a bare --wait is seconds), -n for one attempt and -E for the conflict exit code (the flock conventions)', async () => {
    const held = await holdfast.lock('flock').acquire();
    try {
      const once = await run(['exec', '-n', 'flock', '--', 'true'], env);
      assert.equal(once.code, 75);
      assert.equal(once.stderr, 'holdfast: lock "flock" is held (one attempt, no wait)\n');
      const started = performance.now();
      const waited = await run(['exec', '-w', '0.3s', '-E', '3', 'flock', '--', 'true'], env);
      assert.equal(waited.code, 3, waited.stderr);
      assert.equal(waited.stderr, 'holdfast: timed out after 300 ms waiting for lock "flock"\n');
      assert.ok(performance.now() - started >= 300);
      // a bare number is seconds, as for flock -w
      const bareStarted = performance.now();
      const bare = await run(['exec', '-w', '0.5', 'flock', '--', 'true'], env);
      assert.equal(bare.code, 75, bare.stderr);
      assert.equal(bare.stderr, 'holdfast: timed out after 500 ms waiting for lock "flock"\n');
      assert.ok(performance.now() - bareStarted >= 500);
      const zero = await run(['exec', '--no-wait', '--conflict-exit-code', '0', 'flock', '--', 'true'], env);
      assert.equal(zero.code, 0);
    } finally {
      await held.release();
    }
    const ran = await run(['exec', '-w', '2s', '--lease', '1m', '--grace', '500ms', 'flock', '--', 'sh', '-c', 'exit 5'], env);
    assert.equal(ran.code, 5, ran.stderr);
  });

  it('fails fast with exit 69 and one line when Redis is unreachable', async () => {
    const port = await freePort();
    const r = await run(['exec', 'x', '--', 'true'], { REDIS_URL: `redis://:secret@127.0.0.1:${port}` });
    assert.equal(r.code, 69);
    assert.match(r.stderr, /^holdfast: cannot reach Redis at redis:\/\/:\*\*\*@127\.0\.0\.1:\d+: .*ECONNREFUSED.*\n$/);
    assert.doesNotMatch(r.stderr, /secret/);
    assert.ok(r.ms < 5000, `${r.ms} ms`);
  });

  it('stops the command and exits 76 when the lock is lost', async () => {
    const pidFile = join(dir, 'lost.pid');
    const p = start(['exec', '--lease', '600', '--grace', '300', 'lost', '--', 'sh', '-c', `echo $$ > ${pidFile}; exec sleep 30`], env);
    await until(() => existsSync(pidFile) && readFileSync(pidFile, 'utf8').endsWith('\n'));
    assert.equal(await holdfast.lock('lost').forceUnlock(), true);
    const r = await p.done;
    assert.equal(r.code, 76, r.stderr);
    assert.match(r.stderr, /lock "lost" was lost \(taken-over\): stopping the command/);
    const pid = Number(readFileSync(pidFile, 'utf8'));
    assert.throws(() => process.kill(pid, 0), /ESRCH/, 'the command is gone');
    assert.ok(r.ms < 10_000);
  });

  it('kills a command that ignores SIGTERM after --grace', async () => {
    const p = start(['exec', '--lease', '600', '--grace', '300', 'stubborn', '--', 'sh', '-c', 'trap "" TERM; while :; do sleep 0.05; done'], env);
    await until(() => holdfast.lock('stubborn').isLocked());
    await holdfast.lock('stubborn').forceUnlock();
    const r = await p.done;
    assert.equal(r.code, 76);
  });

  it('forwards SIGTERM to the command, then releases the lock and exits with its code', async () => {
    const ready = join(dir, 'sig.ready');
    const p = start(['exec', 'sig', '--', 'sh', '-c', `trap 'exit 42' TERM; touch ${ready}; while :; do sleep 0.05; done`], env);
    await until(() => existsSync(ready));
    p.child.kill('SIGTERM');
    const r = await p.done;
    assert.equal(r.code, 42, r.stderr);
    assert.equal(await holdfast.lock('sig').isLocked(), false);
  });

  it('is interrupted by SIGTERM while waiting (128 + 15) and takes nothing', async () => {
    const held = await holdfast.lock('queue').acquire();
    try {
      const p = start(['exec', 'queue', '--', 'true'], env);
      await until(async () => Number(await redis.call('PUBSUB', 'NUMSUB', 'holdfast:{queue}:ch').then((r) => (r as [string, number])[1])) > 0);
      p.child.kill('SIGTERM');
      const r = await p.done;
      assert.equal(r.code, 143);
      assert.match(r.stderr, /interrupted by SIGTERM/);
    } finally {
      await held.release();
    }
  });
});

describe('holdfast --help and unknown commands (built CLI)', () => {
  const COMMANDS = ['exec', 'inspect', 'list', 'unlock', 'jobs', 'dashboard', 'demo', 'migrate'];

  it('list every command, and each command has its own --help', async () => {
    await ensureBuilt();
    const top = await run(['--help'], {});
    assert.equal(top.code, 0);
    for (const command of COMMANDS) assert.match(top.stdout, new RegExp(`^  ${command}\\b`, 'm'), command);
    const unknown = await run(['nope'], {});
    assert.equal(unknown.code, 64);
    const listed = /^holdfast: unknown command "nope" \(commands: ([^)]*)\)/.exec(unknown.stderr);
    assert.ok(listed, unknown.stderr);
    assert.deepEqual(listed[1]!.split(', ').sort(), [...COMMANDS].sort());
    for (const command of COMMANDS) {
      const r = await run([command, '--help'], {});
      assert.equal(r.code, 0, command);
      assert.match(r.stdout, new RegExp(`^Usage: holdfast ${command}`), command);
    }
  });
});

/**
 * `npm test` on a machine without redis-server: scripts/ensure-servers.sh installs it where it may (root, apt-get),
 * else stops at once with the one command to run. Here the machine is made bare for the script: a PATH that holds
 * only the tools it uses (not redis-server, redis-sentinel nor apt-get), and HOLDFAST_NO_INSTALL standing in for a
 * user who may not install.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { ROOT } from '../support/cli.js';

const SCRIPT = join(ROOT, 'scripts', 'ensure-servers.sh');

function which(tool: string): string {
  const found = spawnSync('sh', ['-c', 'command -v "$1"', 'sh', tool], { encoding: 'utf8' }).stdout.trim();
  assert.ok(found, `${tool} is on this machine`);
  return found;
}

describe('scripts/ensure-servers.sh', () => {
  let bare: string;
  before(() => {
    bare = mkdtempSync(join(tmpdir(), 'holdfast-bare-'));
    for (const tool of ['bash', 'id']) symlinkSync(which(tool), join(bare, tool));
  });
  after(() => rmSync(bare, { recursive: true, force: true }));

  it('stops at once, in one line, with the command that installs what is missing, when it may not install', () => {
    const started = performance.now();
    const r = spawnSync(join(bare, 'bash'), [SCRIPT], { encoding: 'utf8', env: { PATH: bare, HOLDFAST_NO_INSTALL: '1' }, timeout: 10_000 });
    const took = performance.now() - started;
    assert.equal(r.status, 1, r.stderr);
    assert.equal(r.stdout, '');
    assert.equal(r.stderr.trim().split('\n').length, 1, r.stderr);
    assert.match(r.stderr, /^holdfast: the tests need redis-server, which is not installed: run `install redis-server redis-sentinel/);
    assert.ok(took < 5000, `${Math.round(took)} ms`);
  });

  it('on a Debian machine (apt-get there) the command is the apt-get line', () => {
    const debian = mkdtempSync(join(tmpdir(), 'holdfast-bare-'));
    try {
      for (const tool of ['bash', 'id']) symlinkSync(which(tool), join(debian, tool));
      writeFileSync(join(debian, 'apt-get'), '#!/bin/sh\nexit 1\n', { mode: 0o755 }); // present, never run: installing is not allowed here
      const r = spawnSync(join(debian, 'bash'), [SCRIPT], { encoding: 'utf8', env: { PATH: debian, HOLDFAST_NO_INSTALL: '1' }, timeout: 10_000 });
      assert.equal(r.status, 1, r.stderr);
      // zookeeper is looked for at its jar's path, which PATH does not hide
      assert.match(r.stderr, /^holdfast: the tests need redis-server, which is not installed: run `sudo apt-get install -y redis-server redis-sentinel( zookeeper)?`\n$/);
    } finally {
      rmSync(debian, { recursive: true, force: true });
    }
  });

  it('passes at once where the servers are installed', () => {
    const r = spawnSync('bash', [SCRIPT], { encoding: 'utf8', env: { ...process.env, HOLDFAST_NO_INSTALL: '1' }, timeout: 10_000 });
    assert.equal(r.status, 0, r.stderr);
    assert.equal(r.stdout, '');
  });
});

/**
 * `npm test` on a machine without redis-server: scripts/ensure-servers.sh installs it where it may (root, apt-get),
 * else stops at once with the one command to run. Here the machine is made bare for the script: a PATH that holds
 * only the tools it uses (not redis-server, redis-sentinel nor apt-get), and HOLDFAST_NO_INSTALL standing in for a
 * user who may not install.
 *
 * PostgreSQL and pgbouncer: the same bare PATH with stand-ins for apt-get (it "installs" a package by copying stub
 * commands into the PATH), pg_lsclusters, pg_ctlcluster and pg_isready (a file says whether the cluster is up), and a
 * pg_hba.conf under PG_CLUSTER_CONF_ROOT (which postgresql-common's tools read too): nothing on the machine is
 * installed, started or reconfigured.
 */
import assert from 'node:assert/strict';
import { spawnSync, type SpawnSyncReturns } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
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
      assert.match(r.stderr, /^holdfast: the tests need redis-server, which is not installed: run `sudo apt-get install -y redis-server redis-sentinel( zookeeper)? postgresql pgbouncer`\n$/);
    } finally {
      rmSync(debian, { recursive: true, force: true });
    }
  });

  it('passes at once where the servers are installed', () => {
    const r = spawnSync('bash', [SCRIPT], { encoding: 'utf8', env: { ...process.env, HOLDFAST_NO_INSTALL: '1' }, timeout: 10_000 });
    assert.equal(r.status, 0, r.stderr);
    assert.equal(r.stdout, '');
  });

  describe('PostgreSQL and pgbouncer', () => {
    // Debian's pg_hba.conf for a new cluster (pg_createcluster: peer locally, scram-sha-256 over TCP)
    const DEBIAN_HBA = [
      'local   all             postgres                                peer',
      'local   all             all                                     peer',
      'host    all             all             127.0.0.1/32            scram-sha-256',
      'host    all             all             ::1/128                 scram-sha-256',
      'local   replication     all                                     peer',
      'host    replication     all             127.0.0.1/32            scram-sha-256',
      'host    replication     all             ::1/128                 scram-sha-256',
      '',
    ].join('\n');
    const POLICY = '/usr/sbin/policy-rc.d';

    interface Machine {
      dir: string;
      bin: string;
      hba: string;
      log: () => string[];
      run: (env?: Record<string, string>) => SpawnSyncReturns<string>;
    }

    /** A bare machine; `installed` lists the stub packages already there, the rest apt-get can install. */
    function machine(installed: string[], clusterUp = false): Machine {
      const dir = mkdtempSync(join(tmpdir(), 'holdfast-pg-'));
      const bin = join(dir, 'bin');
      const state = join(dir, 'state');
      const pkgs = join(dir, 'pkgs');
      const log = join(dir, 'log');
      mkdirSync(bin);
      mkdirSync(state);
      // what the script itself uses besides builtins (chmod and rm: apt_install's policy-rc.d)
      for (const tool of ['bash', 'id', 'sed', 'seq', 'sleep', 'chmod', 'rm']) symlinkSync(which(tool), join(bin, tool));
      const stub = (body: string): string => `#!/bin/sh\nPATH=/usr/bin:/bin\necho "$(basename "$0") $*" >>"${log}"\n${body}\n`;
      const packages: Record<string, Record<string, string>> = {
        'redis-server': { 'redis-server': stub('') },
        'redis-sentinel': { 'redis-sentinel': stub('') },
        pgbouncer: { pgbouncer: stub('') },
        postgresql: {
          psql: stub(''),
          pg_lsclusters: stub(`s=down; [ -e "${state}/up" ] && s=online\necho "15  main    5432 $s   postgres /var/lib/postgresql/15/main /var/log/postgresql/postgresql-15-main.log"`),
          pg_ctlcluster: stub(`case "$*" in *start*|*reload*) touch "${state}/up";; esac`),
          pg_isready: stub(`[ -e "${state}/up" ]`),
        },
      };
      for (const [name, files] of Object.entries(packages)) {
        mkdirSync(join(pkgs, name), { recursive: true });
        for (const [file, text] of Object.entries(files)) {
          writeFileSync(join(installed.includes(name) ? bin : join(pkgs, name), file), text, { mode: 0o755 });
        }
      }
      writeFileSync(join(bin, 'apt-get'), stub(`[ "$1" = install ] || exit 0\nfor p; do [ -d "${pkgs}/$p" ] && cp "${pkgs}/$p"/* "${bin}/"; done; exit 0`), { mode: 0o755 });
      writeFileSync(join(bin, 'update-rc.d'), stub(''), { mode: 0o755 });
      if (clusterUp) writeFileSync(join(state, 'up'), '');
      const hba = join(dir, 'etc', '15', 'main', 'pg_hba.conf');
      mkdirSync(join(hba, '..'), { recursive: true });
      writeFileSync(hba, DEBIAN_HBA);
      return {
        dir,
        bin,
        hba,
        log: () => (existsSync(log) ? readFileSync(log, 'utf8').trim().split('\n').filter(Boolean) : []),
        run: (env = {}) =>
          spawnSync(join(bin, 'bash'), [SCRIPT], { encoding: 'utf8', env: { PATH: bin, PG_CLUSTER_CONF_ROOT: join(dir, 'etc'), ...env }, timeout: 20_000 }),
      };
    }

    it('installs postgresql and pgbouncer where they are missing, gives the new cluster trust for local TCP, starts it, and disables the pgbouncer service', (t) => {
      if (process.getuid?.() !== 0) return t.skip('installing is for root');
      const m = machine([]);
      const policyBefore = existsSync(POLICY);
      try {
        const r = m.run();
        assert.equal(r.status, 0, r.stderr);
        assert.equal(existsSync(POLICY), policyBefore, 'policy-rc.d as it was');
        const log = m.log();
        const install = log.find((l) => l.startsWith('apt-get install'));
        assert.match(install ?? '', /^apt-get install -y -qq redis-server redis-sentinel( zookeeper)? postgresql pgbouncer$/);
        assert.ok(log.includes('update-rc.d pgbouncer disable'), log.join('\n'));
        assert.ok(log.includes('pg_ctlcluster --skip-systemctl-redirect 15 main start'), log.join('\n'));
        assert.ok(!log.some((l) => l.startsWith('pgbouncer')), 'pgbouncer itself is never run');
        assert.match(r.stdout, /starting PostgreSQL 15\/main on port 5432/);
        const hba = readFileSync(m.hba, 'utf8');
        assert.match(hba, /^host\s+all\s+all\s+127\.0\.0\.1\/32\s+trust$/m);
        assert.match(hba, /^host\s+all\s+all\s+::1\/128\s+trust$/m);
        // the rest as Debian made it
        assert.equal(hba.replace(/trust$/gm, 'scram-sha-256'), DEBIAN_HBA);
      } finally {
        rmSync(m.dir, { recursive: true, force: true });
      }
    });

    it('starts a stopped cluster that was already there, without touching its configuration; quick and silent once it runs', () => {
      const m = machine(['redis-server', 'redis-sentinel', 'pgbouncer', 'postgresql']);
      try {
        const r = m.run({ HOLDFAST_NO_INSTALL: '1' });
        assert.equal(r.status, 0, r.stderr);
        assert.equal(r.stdout, 'starting PostgreSQL 15/main on port 5432\n');
        assert.ok(m.log().includes('pg_ctlcluster --skip-systemctl-redirect 15 main start'), m.log().join('\n'));
        assert.ok(!m.log().some((l) => l.startsWith('apt-get')));
        assert.equal(readFileSync(m.hba, 'utf8'), DEBIAN_HBA);

        const before = m.log().length;
        const started = performance.now();
        const again = m.run({ HOLDFAST_NO_INSTALL: '1' });
        const took = performance.now() - started;
        assert.equal(again.status, 0, again.stderr);
        assert.equal(again.stdout + again.stderr, '');
        assert.deepEqual(m.log().slice(before), ['pg_isready -q -h 127.0.0.1 -p 5432 -t 2']);
        assert.ok(took < 2000, `${Math.round(took)} ms`);
      } finally {
        rmSync(m.dir, { recursive: true, force: true });
      }
    });

    it("uses HOLDFAST_POSTGRES_URL's port, and leaves PostgreSQL alone when that server is elsewhere", () => {
      const m = machine(['redis-server', 'redis-sentinel', 'pgbouncer', 'postgresql']);
      try {
        const r = m.run({ HOLDFAST_NO_INSTALL: '1', HOLDFAST_POSTGRES_URL: 'postgres://postgres@127.0.0.1:5499/postgres' });
        assert.equal(r.status, 0, r.stderr);
        assert.match(r.stderr, /^holdfast: no PostgreSQL cluster on port 5499 /);
        assert.ok(!m.log().some((l) => l.startsWith('pg_ctlcluster')));

        const bare = machine(['redis-server', 'redis-sentinel']);
        try {
          const elsewhere = bare.run({ HOLDFAST_NO_INSTALL: '1', HOLDFAST_POSTGRES_URL: 'postgres://hf@db.example:5432/hf' });
          assert.equal(elsewhere.status, 0, elsewhere.stderr);
          // pgbouncer is still wanted (the tests start one in front of whatever server), postgresql is not
          assert.match(elsewhere.stderr, /^holdfast: pgbouncer not installed: /);
        } finally {
          rmSync(bare.dir, { recursive: true, force: true });
        }
      } finally {
        rmSync(m.dir, { recursive: true, force: true });
      }
    });
  });
});

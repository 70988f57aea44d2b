/**
 * holdfast's PostgreSQL schema: created on first use, or ahead of time by `holdfast migrate` (or `migratePostgres`);
 * versioned, so that a client meeting an older schema upgrades it or, when its role may not, says what to run; usable
 * by a role with rights on that schema only; names and owners are data, never SQL.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { after, describe, test } from 'node:test';
import { Holdfast, isHoldfastError, migratePostgres, postgresSchemaSql } from '../../src/index.js';
import { createRole, createTestSchema, dropRole, dropSchema, openPool, POSTGRES_URL } from '../support/postgres.js';

const ROOT = join(import.meta.dirname, '..', '..');
const admin = openPool(POSTGRES_URL, 4);
after(() => admin.end());

/** Runs the command line from the sources. */
function cli(args: string[], env: Record<string, string> = {}): { code: number | null; stdout: string; stderr: string } {
  const r = spawnSync(process.execPath, ['--import', 'tsx', join(ROOT, 'src/cli/main.ts'), ...args], { encoding: 'utf8', env: { ...process.env, ...env }, timeout: 60_000 });
  return { code: r.status, stdout: r.stdout, stderr: r.stderr };
}

describe('the PostgreSQL schema', () => {
  test('created on first use, with the version row; a second client finds it up to date', async () => {
    const schema = createTestSchema('first_use');
    const pool = openPool();
    try {
      const a = new Holdfast({ postgres: pool, schema });
      const b = new Holdfast({ postgres: pool, schema });
      // many clients starting at once install it once (an advisory lock), and every one of them works
      const held = await Promise.all([a, b].map((h, i) => h.lock(`first-${i}`).acquire({ lease: 5000 })));
      const { rows } = await admin.query(`SELECT version, revision FROM ${schema}.meta`);
      assert.equal(rows.length, 1);
      assert.equal(rows[0].version, 1);
      await Promise.all(held.map((h) => h.release()));
      await a.close();
      await b.close();
    } finally {
      await pool.end();
      await dropSchema(schema);
    }
  });

  test('holdfast migrate: --print shows the SQL, a run installs it, a second run finds it up to date', async () => {
    const schema = createTestSchema('migrate');
    try {
      const printed = cli(['migrate', '--print', '--schema', schema]);
      assert.equal(printed.code, 0, printed.stderr);
      assert.match(printed.stdout, new RegExp(`CREATE SCHEMA IF NOT EXISTS "${schema}"`));
      assert.match(printed.stdout, new RegExp(`CREATE OR REPLACE FUNCTION "${schema}".lock_acquire`));
      const installed = (await admin.query(`SELECT to_regclass('${schema}.meta') AS t`)).rows[0].t;
      assert.equal(installed, null, '--print connects to nothing');
      const first = cli(['migrate', '--postgres', POSTGRES_URL, '--schema', schema, '--json']);
      assert.equal(first.code, 0, first.stderr);
      assert.equal(JSON.parse(first.stdout).installed, true);
      const second = cli(['migrate', '--schema', schema], { DATABASE_URL: POSTGRES_URL });
      assert.equal(second.code, 0, second.stderr);
      assert.match(second.stdout, /is up to date/);
      const bad = cli(['migrate', '--postgres', 'postgres://postgres@127.0.0.1:1/postgres', '--schema', schema]);
      assert.equal(bad.code, 69, 'an unreachable server exits 69, as an unreachable Redis does');
      assert.match(bad.stderr, /PostgreSQL failed: .*ECONNREFUSED/);
      assert.equal(cli(['migrate', '--schema', 'a;b', '--print']).code, 64);
    } finally {
      await dropSchema(schema);
    }
  });

  test('a role with rights on the schema only: locks work, nothing else is reachable, and an older schema names the command to run', async () => {
    const schema = createTestSchema('role');
    const role = await createRole('locks');
    const pool = openPool(role.url, 4);
    try {
      await migratePostgres(admin, { schema });
      // the grants the PostgreSQL guide lists for an application role on a schema migrated by another role
      await admin.query(`GRANT USAGE ON SCHEMA ${schema} TO ${role.name};
        GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA ${schema} TO ${role.name};
        GRANT USAGE, SELECT, UPDATE ON ALL SEQUENCES IN SCHEMA ${schema} TO ${role.name};
        GRANT EXECUTE ON ALL FUNCTIONS IN SCHEMA ${schema} TO ${role.name}`);
      const holdfast = new Holdfast({ postgres: pool, schema });
      const lock = holdfast.lock('role-lock');
      const held = await lock.acquire();
      const waiting = lock.acquire({ timeout: 5000 });
      await new Promise((r) => setTimeout(r, 100));
      await held.release();
      await (await waiting).release();
      await assert.rejects(pool.query(`CREATE TABLE ${schema}.intruder (x int)`), /permission denied/);
      await assert.rejects(pool.query('CREATE SCHEMA hf_not_allowed'), /permission denied/);
      await holdfast.close();

      // an older schema: this role may not upgrade it, and is told what to run
      await admin.query(`UPDATE ${schema}.meta SET revision = 'older'`);
      const fresh = new Holdfast({ postgres: pool, schema });
      await assert.rejects(fresh.lock('x').acquire(), (error: unknown) => {
        assert.ok(isHoldfastError(error));
        assert.match((error as Error).message, new RegExp(`npx holdfast migrate --postgres <url> --schema ${schema}`));
        return true;
      });
      await fresh.close();
      // migrated by the admin, the same role goes on
      assert.equal((await migratePostgres(admin, { schema })).installed, true);
      const again = new Holdfast({ postgres: pool, schema });
      await (await again.lock('x').acquire()).release();
      await again.close();
    } finally {
      await pool.end();
      await dropSchema(schema);
      await dropRole(role);
    }
  });

  test('names, owners and labels are data: quotes, semicolons, Unicode and 1,000-character names work', async () => {
    const schema = createTestSchema('names');
    const pool = openPool();
    const holdfast = new Holdfast({ postgres: pool, schema, label: "o'brien; DROP TABLE x; --" });
    try {
      const names = ["it's", 'a;b', 'x"); DROP SCHEMA public; --', '$1 $$ \\ {', 'ünïcødé ✓ 日本', 'n'.repeat(1000), 'é'.repeat(500)];
      for (const name of names) {
        const lock = holdfast.lock(name);
        const held = await lock.acquire({ owner: `${name}'owner` });
        const info = await lock.inspect();
        assert.equal(info.owner, `${name}'owner`);
        assert.equal(info.name, name);
        await held.release();
        assert.equal(await lock.isLocked(), false);
      }
    } finally {
      await holdfast.close();
      await pool.end();
      await dropSchema(schema);
    }
  });

  test('the schema name is checked: a plain identifier, at most 63 characters', () => {
    const pool = openPool();
    try {
      for (const bad of ['a;b', 'a b', '1abc', '', 'x'.repeat(64), 'é', 'a"b']) {
        assert.throws(() => new Holdfast({ postgres: pool, schema: bad }), TypeError, bad);
      }
      assert.throws(() => postgresSchemaSql('drop;'), TypeError);
      assert.throws(() => new Holdfast({ postgres: pool, redis: {} }), /one store, not both/);
      assert.throws(() => new Holdfast({ postgres: {} }), /node-postgres Pool/);
      assert.throws(() => new Holdfast({ postgres: pool, replicaSync: { replicas: 1, timeout: 100 } }), /synchronous_commit/);
    } finally {
      void pool.end();
    }
  });
});

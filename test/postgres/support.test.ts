/**
 * test/support/postgres.ts against the real server: schema names, the drop that refuses what it did not make, pools,
 * availability, and least-privilege roles. Skipped when no PostgreSQL answers at POSTGRES_URL.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import pg from 'pg';
import { freePort } from '../support/redis-server.js';
import { POSTGRES_URL, createRole, createTestSchema, dropRole, dropSchema, openPool, postgresAvailable } from '../support/postgres.js';

const available = await postgresAvailable();

describe('test/support/postgres.ts', () => {
  it('createTestSchema: hf_<label>_<random>, only [a-z0-9_], at most 63 characters, never twice the same', () => {
    const a = createTestSchema('lock');
    assert.match(a, /^hf_lock_[0-9a-f]{10}$/);
    const long = createTestSchema('Read-Write Lock: ' + 'x'.repeat(100));
    assert.match(long, /^hf_read_write_lock_x+_[0-9a-f]{10}$/);
    assert.equal(long.length, 63);
    assert.match(createTestSchema('---'), /^hf_x_[0-9a-f]{10}$/);
    assert.notEqual(createTestSchema('lock'), a);
  });

  it('dropSchema refuses a name createTestSchema did not make, before sending anything', async () => {
    for (const name of ['public', 'pg_catalog', 'hf_lock_0123456789', 'hf_x; DROP SCHEMA public']) {
      // an unreachable target: a refusal never gets as far as connecting
      await assert.rejects(dropSchema(name, 'postgres://postgres@127.0.0.1:1/none'), /was not made by createTestSchema; refusing/);
    }
  });

  it('postgresAvailable: false within about 2 s where nothing answers', async () => {
    const started = performance.now();
    assert.equal(await postgresAvailable(`postgres://postgres@127.0.0.1:${await freePort()}/postgres`), false);
    assert.ok(performance.now() - started < 2500);
  });

  describe('on the server', { skip: available ? false : `no PostgreSQL at ${POSTGRES_URL}` }, () => {
    it('postgresAvailable is true; a schema made under the name is dropped with what it holds, and dropping again is fine', async () => {
      assert.equal(await postgresAvailable(), true);
      const pool = openPool();
      const schema = createTestSchema('support');
      try {
        await pool.query(`CREATE SCHEMA ${schema}`);
        await pool.query(`CREATE TABLE ${schema}.t (k text PRIMARY KEY)`);
        await dropSchema(schema, pool);
        const { rows } = await pool.query('SELECT 1 FROM pg_namespace WHERE nspname = $1', [schema]);
        assert.equal(rows.length, 0);
        await assert.rejects(dropSchema(schema, pool), /refusing/, 'once dropped, the name is no longer ours');
      } finally {
        await pool.end();
      }
    });

    it("openPool: a server ending an idle connection is an 'error' kept in pool.errors, not an uncaught exception", async () => {
      const pool = openPool(POSTGRES_URL, 2);
      const admin = new pg.Client(POSTGRES_URL);
      await admin.connect();
      try {
        const c = await pool.connect();
        const { rows } = await c.query<{ pid: number }>('SELECT pg_backend_pid() AS pid');
        c.release();
        await admin.query('SELECT pg_terminate_backend($1)', [rows[0]!.pid]);
        const deadline = Date.now() + 3000;
        while (pool.errors.length === 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
        assert.equal(pool.errors.length, 1);
        assert.deepEqual((await pool.query<{ one: number }>('SELECT 1 AS one')).rows, [{ one: 1 }]);
      } finally {
        await admin.end();
        await pool.end();
      }
    });

    it('createRole: a login role that is no superuser and may use only the schema it is granted; dropRole removes it', async () => {
      const admin = openPool(POSTGRES_URL, 2);
      const mine = createTestSchema('granted');
      const other = createTestSchema('not_granted');
      const role = await createRole('support', admin);
      let as: pg.Client | undefined;
      try {
        assert.match(role.name, /^hf_role_support_[0-9a-f]{10}$/);
        const { rows } = await admin.query('SELECT rolsuper, rolcanlogin, rolcreatedb, rolcreaterole, rolreplication, rolbypassrls FROM pg_roles WHERE rolname = $1', [role.name]);
        assert.deepEqual(rows, [{ rolsuper: false, rolcanlogin: true, rolcreatedb: false, rolcreaterole: false, rolreplication: false, rolbypassrls: false }]);
        await admin.query(`CREATE SCHEMA ${mine}`);
        await admin.query(`CREATE SCHEMA ${other}`);
        await admin.query(`GRANT USAGE, CREATE ON SCHEMA ${mine} TO ${role.name}`);

        as = new pg.Client(role.url);
        as.on('error', () => {});
        await as.connect();
        assert.equal((await as.query<{ u: string }>('SELECT current_user AS u')).rows[0]!.u, role.name);
        await as.query(`CREATE TABLE ${mine}.t (k int)`);
        await as.query(`INSERT INTO ${mine}.t VALUES (1)`);
        await assert.rejects(as.query(`CREATE TABLE ${other}.t (k int)`), /permission denied for schema/);
        await assert.rejects(as.query(`CREATE TABLE public.hf_should_not_exist (k int)`), /permission denied for schema public/);
        await assert.rejects(as.query(`CREATE SCHEMA ${createTestSchema('by_role')}`), /permission denied for database/);
        await as.end();
        as = undefined;

        await dropRole(role, admin); // its table in `mine` goes with it (DROP OWNED BY)
        assert.equal((await admin.query('SELECT 1 FROM pg_roles WHERE rolname = $1', [role.name])).rows.length, 0);
        assert.equal((await admin.query(`SELECT to_regclass('${mine}.t') AS t`)).rows[0].t, null);
        await assert.rejects(dropRole(role, admin), /refusing/);
        await assert.rejects(dropRole('postgres', admin), /was not made by createRole; refusing/);
      } finally {
        await as?.end().catch(() => {});
        await dropRole(role, admin).catch(() => {});
        await dropSchema(mine, admin);
        await dropSchema(other, admin);
        await admin.end();
      }
    });
  });
});

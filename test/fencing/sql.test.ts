/**
 * Fencing against the real PostgreSQL at 127.0.0.1:5432 (or PGURL): the test creates its own schema and drops it.
 * When no PostgreSQL answers, the suite is skipped with a message (it never fakes one).
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import pg from 'pg';
import { fencedUpdate, fencedUpdateSql, quoteIdent, StaleTokenError, type Holdfast, type SqlQuery } from '../../src/index.js';
import { adapters, makeHoldfast } from '../support/clients.js';
import { RedisServer } from '../support/redis-server.js';

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));
const schema = `holdfast_test_${process.pid}_${Math.random().toString(36).slice(2, 8)}`;

async function connect(): Promise<pg.Pool | undefined> {
  const candidates = process.env.PGURL ? [process.env.PGURL] : ['postgres://postgres@127.0.0.1:5432/postgres', 'postgres://root@127.0.0.1:5432/postgres'];
  for (const connectionString of candidates) {
    const pool = new pg.Pool({ connectionString, max: 4, connectionTimeoutMillis: 2000 });
    try {
      await pool.query('SELECT 1');
      return pool;
    } catch {
      await pool.end();
    }
  }
  return undefined;
}

let server: RedisServer;
let pool: pg.Pool | undefined;
let holdfast: Holdfast;
let other: Holdfast;
const disposers: (() => Promise<void>)[] = [];

before(async () => {
  pool = await connect();
  if (!pool) return;
  server = await RedisServer.start();
  const first = await makeHoldfast(adapters[0]!, server.url);
  const second = await makeHoldfast(adapters[1]!, server.url, { prefix: first.holdfast.settings.prefix });
  holdfast = first.holdfast;
  other = second.holdfast;
  disposers.push(first.dispose, second.dispose);
  await pool.query(`CREATE SCHEMA ${quoteIdent(schema)}`);
  await pool.query(`CREATE TABLE ${quoteIdent(schema)}.accounts (id int PRIMARY KEY, balance int NOT NULL, fence bigint NOT NULL DEFAULT 0)`);
  await pool.query(`INSERT INTO ${quoteIdent(schema)}.accounts (id, balance) VALUES (1, 100), (2, 100)`);
});

after(async () => {
  for (const d of disposers) await d();
  if (pool) {
    await pool.query(`DROP SCHEMA IF EXISTS ${quoteIdent(schema)} CASCADE`);
    await pool.end();
  }
  await server?.stop();
});

void describe('fencing against PostgreSQL', () => {
  const table = `${schema}.accounts`;
  const query: SqlQuery = (text, values) => pool!.query(text, values);
  const balance = async (id: number): Promise<{ balance: number; fence: number }> => {
    const { rows } = await pool!.query(`SELECT balance, fence FROM ${quoteIdent(schema)}.accounts WHERE id = $1`, [id]);
    const row = rows[0] as { balance: number; fence: string };
    return { balance: row.balance, fence: Number(row.fence) };
  };

  void it('the classic failure: A pauses past its lease, B updates, A wakes and its stale UPDATE changes nothing', async (t) => {
    if (!pool) return t.skip('no PostgreSQL at 127.0.0.1:5432 (set PGURL)');
    const lockA = await holdfast.lock('account:1').acquire({ lease: 300 });
    const readByA = (await balance(1)).balance; // A reads 100, means to subtract 30

    await sleep(450); // A pauses past its lease

    const lockB = await other.lock('account:1').acquire({ timeout: 1000 });
    assert.ok(lockB.token > lockA.token);
    const readByB = (await balance(1)).balance;
    assert.equal(await fencedUpdate(query, { table, id: 1, set: { balance: readByB - 50 }, token: lockB.token }), 1);
    await lockB.release();

    // A wakes and writes what it computed from its stale read: rejected, B's update stands
    await assert.rejects(fencedUpdate(query, { table, id: 1, set: { balance: readByA - 30 }, token: lockA.token }), (e: unknown) => {
      assert.ok(e instanceof StaleTokenError);
      assert.equal(e.token, lockA.token);
      assert.equal(e.current, lockB.token);
      return true;
    });
    assert.deepEqual(await balance(1), { balance: 50, fence: lockB.token });
  });

  void it('without the fence the same interleaving loses B\'s update (why the fence column matters)', async (t) => {
    if (!pool) return t.skip('no PostgreSQL at 127.0.0.1:5432 (set PGURL)');
    const readByA = (await balance(2)).balance;
    await pool.query(`UPDATE ${quoteIdent(schema)}.accounts SET balance = $1 WHERE id = 2`, [readByA - 50]); // B
    await pool.query(`UPDATE ${quoteIdent(schema)}.accounts SET balance = $1 WHERE id = 2`, [readByA - 30]); // stale A
    assert.equal((await balance(2)).balance, 70, 'B\'s -50 was silently lost');
  });

  void it('accepts the same holder twice, reports a missing row as 0, and builds a quoted statement', async (t) => {
    if (!pool) return t.skip('no PostgreSQL at 127.0.0.1:5432 (set PGURL)');
    const lock = await holdfast.lock('account:1').acquire();
    assert.equal(await fencedUpdate(query, { table, id: 1, set: { balance: 10 }, token: lock.token }), 1);
    assert.equal(await fencedUpdate(query, { table, id: 1, set: { balance: 11 }, token: lock.token }), 1);
    assert.equal(await fencedUpdate(query, { table, id: 99, set: { balance: 1 }, token: lock.token }), 0);
    await lock.release();
    const { text, values } = fencedUpdateSql({ table: 's.t"x', id: 7, set: { a: 1, b: 'two' }, token: 9 });
    assert.equal(text, 'UPDATE "s"."t""x" SET "a" = $1, "b" = $2, "fence" = $3 WHERE "id" = $4 AND COALESCE("fence", 0) <= $3 RETURNING "fence"');
    assert.deepEqual(values, [1, 'two', 9, 7]);
  });

  void it('rejects bad input before any query', async () => {
    const never: SqlQuery = () => Promise.reject(new Error('must not be called'));
    await assert.rejects(fencedUpdate(never, { table: 't', id: 1, set: { a: 1 }, token: 0 }), RangeError);
    await assert.rejects(fencedUpdate(never, { table: '', id: 1, set: { a: 1 }, token: 1 }), RangeError);
    await assert.rejects(fencedUpdate(never, { table: 't', id: 1, set: {}, token: 1 }), RangeError);
    await assert.rejects(fencedUpdate(never, { table: 't', id: 1, set: { fence: 1 }, token: 1 }), RangeError);
    await assert.rejects(fencedUpdate(never, { table: 't', set: { a: 1 }, token: 1 } as never), TypeError);
    await assert.rejects(fencedUpdate(never, { table: 't', id: 1, set: { a: 1 }, token: 1, where: 'x' } as never), TypeError);
    await assert.rejects(fencedUpdate('q' as never, { table: 't', id: 1, set: { a: 1 }, token: 1 }), TypeError);
    assert.throws(() => quoteIdent('a..b'), RangeError);
  });
});

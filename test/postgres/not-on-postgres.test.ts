/**
 * What runs on Redis only for now fails at once on a PostgreSQL client, with a TypeError that names it, instead of at
 * its first operation: leader election, the scheduler, the segmented stock, the fenced key, the fencing counters'
 * migration, and a Redlock given the client as a node. Nothing reaches the database: the schema is not even
 * installed. Skipped when no PostgreSQL answers at POSTGRES_URL.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type pg from 'pg';
import { Holdfast, Redlock } from '../../src/index.js';
import { createTestSchema, dropSchema, openPool, POSTGRES_URL, postgresAvailable } from '../support/postgres.js';

const available = await postgresAvailable();

describe('Redis-only primitives on a PostgreSQL client', { skip: available ? false : `no PostgreSQL at ${POSTGRES_URL}` }, () => {
  let pool: pg.Pool;
  let schema: string;
  let holdfast: Holdfast;
  before(() => {
    pool = openPool(POSTGRES_URL, 2);
    schema = createTestSchema('not_on_postgres');
    holdfast = new Holdfast({ postgres: pool, schema });
  });
  after(async () => {
    await holdfast.close();
    await pool.end();
    await dropSchema(schema);
  });

  /** The TypeError of `what`: it names the primitive and says it is Redis-only for now. */
  const redisOnly = (what: string) => (error: unknown) => {
    assert.ok(error instanceof TypeError, `a TypeError, got ${String(error)}`);
    assert.ok(error.message.startsWith(`holdfast.${what}() is Redis-only for now`), error.message);
    assert.match(error.message, /PostgreSQL/);
    return true;
  };

  it('election, scheduler, segmentedStock and fencedKey throw when asked for, before anything is built', () => {
    assert.throws(() => holdfast.election('leader'), redisOnly('election'));
    assert.throws(() => holdfast.scheduler(), redisOnly('scheduler'));
    assert.throws(() => holdfast.segmentedStock('stock'), redisOnly('segmentedStock'));
    assert.throws(() => holdfast.fencedKey('value'), redisOnly('fencedKey'));
  });

  it('migrateFencingCounters rejects at once', async () => {
    await assert.rejects(holdfast.migrateFencingCounters(), redisOnly('migrateFencingCounters'));
  });

  it('a Redlock does not take a PostgreSQL client as a node', () => {
    assert.throws(() => new Redlock({ redis: [holdfast] }), (error: unknown) => {
      assert.ok(error instanceof TypeError, `a TypeError, got ${String(error)}`);
      assert.match(error.message, /Redlock runs on independent Redis servers/);
      return true;
    });
  });

  it('none of them reached the database: the schema was never installed', async () => {
    const { rows } = await pool.query<{ found: string | null }>('SELECT to_regnamespace($1)::text AS found', [schema]);
    assert.equal(rows[0]?.found, null);
  });

  it('what runs on PostgreSQL still does', async () => {
    const held = await holdfast.lock('still').acquire();
    assert.ok(held.token > 0);
    await held.release();
  });
});

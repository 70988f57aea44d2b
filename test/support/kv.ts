/**
 * A shared counter for tests that prove mutual exclusion across processes: a plain read-modify-write (GET, then SET)
 * that loses updates unless a lock serialises it. On Redis it is a key; on the postgres adapter a row of a table in
 * the suite's schema (`test_kv`), so the same test runs on both stores.
 */
import type pg from 'pg';
import type { Holdfast } from '../../src/index.js';
import { postgresUrlOf, type AdapterCase } from './clients.js';

/** GET / SET / INCR of one string value by key. */
export interface Kv {
  get(key: string): Promise<string | null>;
  set(key: string, value: string): Promise<void>;
  incr(key: string): Promise<number>;
}

/** The shared values of `adapter`'s store: `client` is the adapter's connection (a pool on postgres), `url` the suite's. */
export function kvOf(adapter: AdapterCase, holdfast: Holdfast, client: unknown, url: string): Kv {
  if (!adapter.postgres) {
    const command = (args: string[]): Promise<unknown> => holdfast.core.command(args, args[1]);
    return {
      get: async (key) => {
        const v = await command(['GET', key]);
        return typeof v === 'string' ? v : Buffer.isBuffer(v) ? v.toString() : typeof v === 'number' ? String(v) : null;
      },
      set: async (key, value) => {
        await command(['SET', key, value]);
      },
      incr: async (key) => Number(await command(['INCR', key])),
    };
  }
  const pool = client as pg.Pool;
  const table = `"${postgresUrlOf(url).schema}".test_kv`;
  let ready: Promise<void> | undefined;
  const ensure = (): Promise<void> =>
    (ready ??= (async () => {
      // several processes may get here at once: one creates, the others find it made
      await pool.query(`CREATE SCHEMA IF NOT EXISTS "${postgresUrlOf(url).schema}"`).catch(() => {});
      await pool.query(`CREATE TABLE IF NOT EXISTS ${table} (key text PRIMARY KEY, value text NOT NULL)`).catch((error: { code?: string }) => {
        if (error.code !== '23505' && error.code !== '42P07') throw error;
      });
    })());
  return {
    get: async (key) => {
      await ensure();
      const { rows } = await pool.query<{ value: string }>(`SELECT value FROM ${table} WHERE key = $1`, [key]);
      return rows[0]?.value ?? null;
    },
    set: async (key, value) => {
      await ensure();
      await pool.query(`INSERT INTO ${table} (key, value) VALUES ($1, $2) ON CONFLICT (key) DO UPDATE SET value = excluded.value`, [key, value]);
    },
    incr: async (key) => {
      await ensure();
      const { rows } = await pool.query<{ value: string }>(
        `INSERT INTO ${table} (key, value) VALUES ($1, '1') ON CONFLICT (key) DO UPDATE SET value = (${table}.value::bigint + 1)::text RETURNING value`,
        [key],
      );
      return Number(rows[0]?.value);
    },
  };
}

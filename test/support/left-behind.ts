/**
 * What a suite's store keeps of the names under a prefix, to check that nothing is left behind once every name is free
 * and nobody waits: on Redis the keys under the prefix (SCAN), on the postgres adapter the rows of the suite's schema
 * that name a record under the prefix (any text column of any table, whatever family wrote it). The store's own
 * bookkeeping, which belongs to no name, is not counted: on PostgreSQL the schema's version (`meta`) and the
 * registrations of listening connections (`listener`, kept by a client while it lives); nor are tables a test made
 * for its own data (`test_*`, e.g. test/support/kv.ts).
 */
import { Redis } from 'ioredis';
import pg from 'pg';
import { postgresUrlOf } from './clients.js';
import type { SuiteContext } from './suite.js';

/** Tables of the store itself, not of any name. */
const BOOKKEEPING = new Set(['meta', 'listener']);

/** A reader of what the store keeps under a prefix (see the module comment); `close()` it when done. */
export interface LeftBehind {
  /** Keys (Redis) or `table.column=value` of rows (PostgreSQL, expired rows included) naming a record under `prefix`. */
  under(prefix: string): Promise<string[]>;
  close(): Promise<void>;
}

/** Opens a {@link LeftBehind} on the suite's store (its first server). */
export async function openLeftBehind(ctx: SuiteContext): Promise<LeftBehind> {
  return ctx.adapter.postgres ? openRows(ctx.urls[0]!) : openKeys(ctx.server.url);
}

/** The rows of the schema at `url` (a postgres adapter suite URL, `…?holdfast_schema=<name>`). */
async function openRows(url: string): Promise<LeftBehind> {
  const { url: server, schema } = postgresUrlOf(url);
  const client = new pg.Client({ connectionString: server, connectionTimeoutMillis: 5000 });
  client.on('error', () => {});
  await client.connect();
  const ident = (s: string): string => `"${s.replace(/"/g, '""')}"`;
  return {
    async under(prefix) {
      const columns = await client.query<{ table_name: string; column_name: string }>(
        `SELECT c.table_name, c.column_name FROM information_schema.columns c
         JOIN information_schema.tables t ON t.table_schema = c.table_schema AND t.table_name = c.table_name AND t.table_type = 'BASE TABLE'
         WHERE c.table_schema = $1 AND c.data_type IN ('text', 'character varying') ORDER BY 1, 2`,
        [schema],
      );
      const found: string[] = [];
      for (const { table_name: table, column_name: column } of columns.rows) {
        if (BOOKKEEPING.has(table) || table.startsWith('test_')) continue;
        const rows = await client.query<{ v: string }>(`SELECT ${ident(column)} AS v FROM ${ident(schema)}.${ident(table)} WHERE starts_with(${ident(column)}, $1)`, [prefix]);
        for (const { v } of rows.rows) found.push(`${table}.${column}=${v}`);
      }
      return found;
    },
    close: () => client.end().catch(() => {}),
  };
}

/** The keys of the Redis at `url` (SCAN). */
async function openKeys(url: string): Promise<LeftBehind> {
  const direct = new Redis(url);
  return {
    async under(prefix) {
      const found: string[] = [];
      let cursor = '0';
      do {
        const [next, keys] = await direct.scan(cursor, 'MATCH', `${prefix.replace(/[*?[\]\\]/g, '\\$&')}*`, 'COUNT', 1000);
        cursor = next;
        found.push(...keys);
      } while (cursor !== '0');
      return found;
    },
    close: async () => {
      direct.disconnect();
    },
  };
}

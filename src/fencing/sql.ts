/**
 * The resource side of fencing for a SQL row: the row keeps the newest fencing token it accepted in a
 * `fence` column, and an update applies only if its token is not older:
 *
 * ```sql
 * UPDATE accounts SET balance = $1, fence = $2 WHERE id = $3 AND fence <= $2
 * ```
 *
 * One row updated: accepted. None: either the row does not exist, or a newer token already wrote to it (the
 * caller is a stale holder). The check and the write are one statement, so the database makes them atomic.
 * A token equal to the stored one is the same holder writing again (accepted); use `fence < $2` instead if each
 * token may write only once.
 *
 * holdfast does not depend on any SQL driver: {@link fencedUpdate} takes a `query(text, values)` function, which
 * node-postgres' `pool.query` / `client.query` already is. Placeholders are PostgreSQL's `$n`.
 *
 * @module
 */
import { StaleTokenError } from '../errors.js';
import { checkInt, checkKnownKeys, checkOptions } from '../internal/validate.js';

/** Runs one parameterised statement: node-postgres' `(text, values) => pool.query(text, values)` fits as is. */
export type SqlQuery = (
  text: string,
  values: unknown[],
) => Promise<{
  /** Rows the statement changed (`null` when the driver does not say). */
  rowCount: number | null;
  /** Rows it returned. */
  rows: unknown[];
}>;

/** Options of {@link fencedUpdate} and {@link fencedUpdateSql}. */
export interface FencedUpdateOptions {
  /** The table, optionally schema-qualified (`"billing.accounts"`); quoted as identifiers. */
  table: string;
  /** The row's key value. */
  id: unknown;
  /** Columns to set and their values (at least one). */
  set: Readonly<Record<string, unknown>>;
  /** The writer's fencing token (a positive integer). */
  token: number;
  /**
   * The key column.
   * @default "id"
   */
  idColumn?: string;
  /**
   * The column holding the newest accepted token (an integer column, `NOT NULL DEFAULT 0` recommended; NULL counts as 0).
   * @default "fence"
   */
  fenceColumn?: string;
}

const UPDATE_KEYS = ['table', 'id', 'set', 'token', 'idColumn', 'fenceColumn'] as const;

/** Quotes one identifier, or a dotted schema-qualified one, for PostgreSQL. */
export function quoteIdent(name: string, what = 'identifier'): string {
  if (typeof name !== 'string') throw new TypeError(`${what} must be a string, got ${typeof name}`);
  if (name.length === 0 || name.length > 255) throw new RangeError(`${what} must be 1 to 255 characters`);
  if (name.includes('\0')) throw new RangeError(`${what} must not contain NUL`);
  return name
    .split('.')
    .map((part) => {
      if (part.length === 0) throw new RangeError(`${what} has an empty part: "${name}"`);
      return `"${part.replace(/"/g, '""')}"`;
    })
    .join('.');
}

/**
 * Builds the fenced UPDATE statement and its values, for running it yourself (e.g. inside your own transaction).
 * The statement updates one row and returns its new fence (`RETURNING`), or no row when stale or absent.
 */
export function fencedUpdateSql(options: FencedUpdateOptions): {
  /** The statement, with `$n` placeholders. */
  text: string;
  /** The values for them. */
  values: unknown[];
} {
  const opts = checkOptions<FencedUpdateOptions>(options);
  checkKnownKeys(opts, UPDATE_KEYS);
  const table = quoteIdent(opts.table as string, 'options.table');
  const token = checkInt(opts.token, 'options.token', 1);
  const idColumn = quoteIdent(opts.idColumn ?? 'id', 'options.idColumn');
  const fence = quoteIdent(opts.fenceColumn ?? 'fence', 'options.fenceColumn');
  if (opts.id === undefined) throw new TypeError('options.id is required');
  const set = opts.set;
  if (typeof set !== 'object' || set === null || Array.isArray(set)) throw new TypeError('options.set must be an object of column → value');
  const columns = Object.keys(set);
  if (columns.length === 0) throw new RangeError('options.set must name at least one column');
  const values: unknown[] = [];
  const assignments = columns.map((column) => {
    if (quoteIdent(column, 'options.set column') === fence) throw new RangeError('options.set must not set the fence column');
    values.push(set[column]);
    return `${quoteIdent(column, 'options.set column')} = $${values.length}`;
  });
  values.push(token);
  const t = `$${values.length}`;
  values.push(opts.id);
  const id = `$${values.length}`;
  const text = `UPDATE ${table} SET ${assignments.join(', ')}, ${fence} = ${t} WHERE ${idColumn} = ${id} AND COALESCE(${fence}, 0) <= ${t} RETURNING ${fence}`;
  return { text, values };
}

/**
 * Runs a fenced UPDATE of one row.
 * @returns 1 when the row was updated, 0 when no row has that id
 * @throws {StaleTokenError} when the row holds a newer token (nothing was written)
 *
 * @example
 * ```ts
 * import pg from 'pg';
 * const pool = new pg.Pool();
 * await using lock = await holdfast.lock('account:42').acquire();
 * await fencedUpdate((text, values) => pool.query(text, values), {
 *   table: 'accounts', id: 42, set: { balance: 100 }, token: lock.token,
 * });
 * ```
 */
export async function fencedUpdate(query: SqlQuery, options: FencedUpdateOptions): Promise<number> {
  if (typeof query !== 'function') throw new TypeError(`query must be a function (text, values) => Promise<{ rowCount }>, got ${typeof query}`);
  const { text, values } = fencedUpdateSql(options);
  const result = await query(text, values);
  if ((result.rowCount ?? result.rows.length) > 0) return 1;
  const fence = quoteIdent(options.fenceColumn ?? 'fence');
  const current = await query(`SELECT COALESCE(${fence}, 0) AS fence FROM ${quoteIdent(options.table)} WHERE ${quoteIdent(options.idColumn ?? 'id')} = $1`, [options.id]);
  const row = current.rows[0] as { fence?: unknown } | undefined;
  if (!row) return 0;
  throw new StaleTokenError(options.table, options.token, Number(row.fence));
}

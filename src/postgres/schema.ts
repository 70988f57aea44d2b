/**
 * The PostgreSQL store's schema: its SQL (src/postgres/sql/*.sql, generated into sql.gen.ts), its name, and how it is
 * installed and upgraded. A schema records its version and its revision (a hash of the SQL) in `<schema>.meta`; a
 * client that finds no schema, or an older one, installs its own (every statement is idempotent: `IF NOT EXISTS`,
 * `CREATE OR REPLACE`), under a transaction-scoped advisory lock so that many processes starting at once install it
 * once. A schema newer than the client is used as it is: its operations keep their contracts.
 *
 * @module
 */
import { ScriptError } from '../errors.js';
import { SQL_FILES, SQL_REVISION } from './sql.gen.js';

/** The schema layout's version: raised when a table changes in a way `IF NOT EXISTS` cannot bring about. */
export const SCHEMA_VERSION = 1;

/** What the schema code needs of a node-postgres pool or client: one query at a time. */
export interface Queryable {
  /** Runs one statement (node-postgres' `query(text, values)`). */
  query(text: string, values?: unknown[]): Promise<QueryRows>;
}

/** The rows a statement returned (node-postgres' `QueryResult`, as far as holdfast reads it). */
export interface QueryRows {
  /** One object per row, by column name. */
  rows: Record<string, unknown>[];
}

/** The default schema. */
export const DEFAULT_SCHEMA = 'holdfast';

/**
 * Checks a schema name: a plain identifier (letters, digits, `_`, starting with a letter or `_`), at most 63 bytes,
 * as PostgreSQL keeps them. It is always quoted in SQL, so its case is kept.
 * @throws {TypeError} for anything else
 */
export function checkSchemaName(value: unknown, what = 'options.schema'): string {
  if (typeof value !== 'string' || !/^[A-Za-z_][A-Za-z0-9_]*$/.test(value) || Buffer.byteLength(value) > 63) {
    throw new TypeError(`${what} must be a plain identifier (letters, digits and _, not starting with a digit, at most 63 characters), got ${JSON.stringify(value)}`);
  }
  return value;
}

/** `name` as a quoted identifier. */
export function quoteIdent(name: string): string {
  return `"${name.replace(/"/g, '""')}"`;
}

/** `text` as a quoted SQL string literal. */
function quoteLiteral(text: string): string {
  return `'${text.replace(/'/g, "''")}'`;
}

/** The whole schema as SQL for `schema` (what `holdfast migrate --print` prints), ending with its version row. */
export function schemaSql(schema: string): string {
  const ident = quoteIdent(checkSchemaName(schema, 'schema'));
  const body = SQL_FILES.map(({ file, source }) => `-- ${file}\n${source.replace(/@schema\b/g, ident).replace(/@channel\b/g, quoteLiteral(schema))}`).join('\n');
  return (
    `${body}\n-- the version installed\n` +
    `INSERT INTO ${ident}.meta (id, version, revision) VALUES (1, ${SCHEMA_VERSION}, ${quoteLiteral(SQL_REVISION)})\n` +
    `ON CONFLICT (id) DO UPDATE SET version = excluded.version, revision = excluded.revision;\n`
  );
}

/** What `<schema>.meta` says, or `null` when the schema (or its meta table) is not there. */
export async function installedVersion(db: Queryable, schema: string): Promise<{ version: number; revision: string } | null> {
  // to_regclass answers NULL for a missing table or schema instead of failing (which would end a transaction)
  const table = `${quoteIdent(schema)}.meta`;
  const { rows: found } = await db.query('SELECT to_regclass($1) IS NOT NULL AS present', [table]);
  if (found[0]?.present !== true) return null;
  const { rows } = await db.query(`SELECT version, revision FROM ${table} WHERE id = 1`);
  const row = rows[0];
  return row ? { version: Number(row.version), revision: String(row.revision) } : null;
}

/** True when the installed schema serves this client as it is. */
export function upToDate(installed: { version: number; revision: string } | null): boolean {
  return installed !== null && (installed.revision === SQL_REVISION || installed.version > SCHEMA_VERSION);
}

/**
 * Installs (or upgrades) the schema in one transaction on `client` (a connection of its own: BEGIN and COMMIT must
 * reach the same server session), under an advisory lock, unless it is up to date by the time the lock is held.
 * Returns true when it installed.
 */
export async function installSchema(client: Queryable, schema: string): Promise<boolean> {
  await client.query('BEGIN');
  try {
    await client.query('SELECT pg_advisory_xact_lock(hashtextextended($1, 0))', [`holdfast schema ${schema}`]);
    if (upToDate(await installedVersion(client, schema))) {
      await client.query('COMMIT');
      return false;
    }
    await client.query(schemaSql(schema));
    await client.query('COMMIT');
    return true;
  } catch (error) {
    await client.query('ROLLBACK').catch(() => {});
    throw error;
  }
}

/** The error of a schema this role could not install: what to run instead. */
export function cannotInstall(schema: string, cause: unknown): ScriptError {
  const why = cause instanceof Error ? cause.message : String(cause);
  return new ScriptError(
    `holdfast's PostgreSQL schema "${schema}" is missing or older than this holdfast (revision ${SQL_REVISION}), and installing it failed: ${why}. ` +
      `Install it with a role that may: npx holdfast migrate --postgres <url> --schema ${schema} (add --print for the SQL to review)`,
    { cause },
  );
}

/** What {@link migratePostgres} found and did. */
export interface MigrationResult {
  /** The schema. */
  schema: string;
  /** True when it installed or upgraded the schema; false when it was up to date. */
  installed: boolean;
  /** The layout version now in the schema. */
  version: number;
  /** The revision (a hash of holdfast's SQL) now in the schema. */
  revision: string;
}

/**
 * Installs or upgrades holdfast's PostgreSQL schema now, as a client does on first use: for teams that run their
 * migrations ahead of a deploy, or give the application's role no right to create anything (see the PostgreSQL
 * guide). Idempotent; safe to run from many processes at once.
 * @param pool a node-postgres `Pool` (or `Client`) connected with a role that may create the schema
 * @param options.schema the schema's name @default "holdfast"
 */
export async function migratePostgres(pool: Queryable & { connect?(): Promise<Queryable & { release(): void }> }, options: { schema?: string } = {}): Promise<MigrationResult> {
  const schema = checkSchemaName(options.schema ?? DEFAULT_SCHEMA);
  let installed: boolean;
  if (typeof pool.connect === 'function' && !('release' in pool)) {
    const client = await pool.connect();
    try {
      installed = await installSchema(client, schema);
    } finally {
      client.release();
    }
  } else {
    installed = await installSchema(pool, schema);
  }
  const now = await installedVersion(pool, schema);
  return { schema, installed, version: now?.version ?? SCHEMA_VERSION, revision: now?.revision ?? SQL_REVISION };
}

/**
 * holdfast's PostgreSQL schema as SQL, for review or for a migration tool: every table and function, and the version
 * row. Running it is what {@link migratePostgres} does (within one transaction).
 * @param schema the schema's name @default "holdfast"
 */
export function postgresSchemaSql(schema: string = DEFAULT_SCHEMA): string {
  return schemaSql(checkSchemaName(schema, 'schema'));
}

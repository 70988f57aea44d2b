/**
 * PostgreSQL for the PostgreSQL store's tests: the server at `HOLDFAST_POSTGRES_URL` (default
 * `postgres://postgres@127.0.0.1:5432/postgres`, which scripts/ensure-servers.sh installs and starts), with
 *
 * - a unique schema name per test (`createTestSchema`), that the test's holdfast creates, and `dropSchema` that drops
 *   only names made here (never a schema the tests did not create);
 * - pools that do not crash the process when the server drops an idle connection (`openPool`);
 * - `postgresAvailable()`, for suites that skip without a server;
 * - least-privilege login roles (`createRole` / `dropRole`), for tests that grant rights on one schema only.
 *
 * Everything made here is removed by the test that made it (drop in an `after`/`finally`).
 */
import { randomBytes } from 'node:crypto';
import pg from 'pg';

export const POSTGRES_URL = process.env.HOLDFAST_POSTGRES_URL?.trim() || 'postgres://postgres@127.0.0.1:5432/postgres';

/** A pool, a client or a connection string: where a helper runs its statements. */
export type PostgresTarget = pg.Pool | pg.Client | pg.PoolClient | string;

const MAX_IDENTIFIER = 63; // NAMEDATALEN - 1
const made = { schemas: new Set<string>(), roles: new Set<string>() };

/** `label` lower-cased, anything outside [a-z0-9_] made `_`, at most `max` characters (at least `x`). */
function clean(label: string, max: number): string {
  const cleaned = label.toLowerCase().replace(/[^a-z0-9_]+/g, '_').replace(/^_+|_+$/g, '').slice(0, max);
  return cleaned || 'x';
}

function uniqueName(prefix: string, label: string): string {
  const random = randomBytes(5).toString('hex'); // 10 characters
  return `${prefix}${clean(label, MAX_IDENTIFIER - prefix.length - 1 - random.length)}_${random}`;
}

/** Runs `sql` on `target` (a connection string opens and closes one client). */
async function run(target: PostgresTarget, sql: string): Promise<void> {
  if (typeof target !== 'string') {
    await target.query(sql);
    return;
  }
  const client = new pg.Client({ connectionString: target, connectionTimeoutMillis: 5000 });
  client.on('error', () => {});
  await client.connect();
  try {
    await client.query(sql);
  } finally {
    await client.end();
  }
}

/**
 * A new schema name `hf_<label>_<10 hex>` (only [a-z0-9_], ≤ 63 characters, so it needs no quoting). Nothing is
 * created: the caller's holdfast creates it. Drop it with `dropSchema` when the test ends.
 */
export function createTestSchema(label: string): string {
  const name = uniqueName('hf_', label);
  made.schemas.add(name);
  return name;
}

/**
 * `DROP SCHEMA IF EXISTS <name> CASCADE`, for a name `createTestSchema` made in this process; any other name is
 * refused (throws) before anything is sent.
 */
export async function dropSchema(name: string, target: PostgresTarget = POSTGRES_URL): Promise<void> {
  if (!made.schemas.has(name) || !/^hf_[a-z0-9_]+$/.test(name)) {
    throw new Error(`dropSchema: ${JSON.stringify(name)} was not made by createTestSchema; refusing to drop it`);
  }
  await run(target, `DROP SCHEMA IF EXISTS ${name} CASCADE`);
  made.schemas.delete(name);
}

/**
 * A `pg.Pool` of at most `max` connections, with an 'error' listener: a server that ends an idle connection
 * (restart, pg_terminate_backend, a bouncer stopped) is not an uncaught error. The errors are kept in `errors`.
 */
export function openPool(url: string = POSTGRES_URL, max = 10): pg.Pool & { errors: Error[] } {
  const pool = Object.assign(new pg.Pool({ connectionString: url, max, connectionTimeoutMillis: 10_000 }), { errors: [] as Error[] });
  pool.on('error', (error) => pool.errors.push(error));
  return pool;
}

/** Whether a connection to `url` succeeds (and answers `SELECT 1`) within 2 s. */
export async function postgresAvailable(url: string = POSTGRES_URL): Promise<boolean> {
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 2000, query_timeout: 2000 });
  client.on('error', () => {});
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<false>((resolve) => (timer = setTimeout(() => resolve(false), 2000)));
  const attempt = (async () => {
    await client.connect();
    await client.query('SELECT 1');
    return true;
  })().catch(() => false);
  try {
    return await Promise.race([attempt, timeout]);
  } finally {
    clearTimeout(timer);
    client.end().catch(() => {});
  }
}

/** A login role made by `createRole`: `url` is `POSTGRES_URL` (or the given one) as that role. */
export interface TestRole {
  name: string;
  password: string;
  url: string;
}

/**
 * A new login role `hf_role_<label>_<10 hex>`: LOGIN with a random password (for servers that ask for one), not a
 * superuser, cannot create databases or roles, no replication, no BYPASSRLS, member of nothing. It has only what
 * PUBLIC has; grant it what the test needs (e.g. `GRANT USAGE, CREATE ON SCHEMA <s> TO <role>`). Drop it with
 * `dropRole`.
 */
export async function createRole(label = 'test', target: PostgresTarget = POSTGRES_URL): Promise<TestRole> {
  const name = uniqueName('hf_role_', label);
  const password = randomBytes(16).toString('hex');
  await run(target, `CREATE ROLE ${name} LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE NOREPLICATION NOBYPASSRLS NOINHERIT PASSWORD '${password}'`);
  made.roles.add(name);
  const url = new URL(typeof target === 'string' ? target : POSTGRES_URL);
  url.username = name;
  url.password = password;
  return { name, password, url: url.toString() };
}

/**
 * Drops a role `createRole` made in this process (any other name is refused): first what it owns and the rights it
 * was granted in the current database (`DROP OWNED BY`), then the role. Its sessions should be closed first.
 */
export async function dropRole(role: string | TestRole, target: PostgresTarget = POSTGRES_URL): Promise<void> {
  const name = typeof role === 'string' ? role : role.name;
  if (!made.roles.has(name) || !/^hf_role_[a-z0-9_]+$/.test(name)) {
    throw new Error(`dropRole: ${JSON.stringify(name)} was not made by createRole; refusing to drop it`);
  }
  await run(target, `DO $$ BEGIN IF EXISTS (SELECT FROM pg_roles WHERE rolname = '${name}') THEN EXECUTE 'DROP OWNED BY ${name}'; END IF; END $$`);
  await run(target, `DROP ROLE IF EXISTS ${name}`);
  made.roles.delete(name);
}

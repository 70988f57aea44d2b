/**
 * `holdfast migrate`: installs or upgrades holdfast's PostgreSQL schema ahead of time (what a client does on first
 * use), or prints it as SQL for a reviewed migration. node-postgres (`pg`) is loaded only here, only when connecting.
 *
 * @module
 */
import { migratePostgres, postgresSchemaSql } from '../index.js';
import { CliError, EXIT, out, parse, UsageError } from './common.js';

const OPTIONS = {
  postgres: { type: 'string' },
  schema: { type: 'string' },
  print: { type: 'boolean' },
  json: { type: 'boolean' },
  verbose: { type: 'boolean' },
  help: { type: 'boolean', short: 'h' },
} as const;

export const MIGRATE_HELP = `Usage: holdfast migrate --postgres <url> [--schema <name>]
       holdfast migrate --print [--schema <name>]

Installs or upgrades holdfast's schema in PostgreSQL: its tables and functions, and the version row. A holdfast
client does the same on first use when its role may; run this instead when migrations are reviewed, or when the
application's role may not create anything. Safe to run again, and from several places at once.

Options:
  --postgres <url>   the server, e.g. postgres://admin@db:5432/app (else $DATABASE_URL)
  --schema <name>    the schema (default: holdfast)
  --print            print the SQL instead of running it (no connection)
  --json             print what was done as JSON
  --verbose          stack traces on errors
  -h, --help         this help

Examples:
  holdfast migrate --postgres "$DATABASE_URL"
  holdfast migrate --print --schema locks > migrations/0042_holdfast.sql`;

/** `holdfast migrate`. */
export async function migrateCommand(argv: string[]): Promise<number> {
  const { values, positionals } = parse(argv, OPTIONS, 'migrate');
  if (values.help) {
    out(MIGRATE_HELP);
    return EXIT.OK;
  }
  if (positionals.length > 0) throw new UsageError(`unexpected argument "${positionals[0]}"`, 'migrate');
  const schema = values.schema ?? 'holdfast';
  if (values.print) {
    out(postgresSchemaSql(schema));
    return EXIT.OK;
  }
  const url = values.postgres ?? process.env.DATABASE_URL;
  if (!url) throw new UsageError('give the server with --postgres <url> (or $DATABASE_URL), or --print for the SQL', 'migrate');
  let pg: typeof import('pg');
  try {
    pg = (await import('pg')).default as unknown as typeof import('pg');
  } catch (error) {
    throw new CliError('holdfast migrate needs node-postgres: npm install pg', EXIT.USAGE, { cause: error });
  }
  const pool = new pg.Pool({ connectionString: url, max: 1, connectionTimeoutMillis: 10_000 });
  pool.on('error', () => {});
  try {
    const result = await migratePostgres(pool, { schema });
    if (values.json) out(JSON.stringify(result));
    else out(result.installed ? `installed holdfast's schema "${result.schema}" (version ${result.version}, revision ${result.revision})` : `holdfast's schema "${result.schema}" is up to date (version ${result.version}, revision ${result.revision})`);
    return EXIT.OK;
  } catch (error) {
    const code = (error as { code?: unknown }).code;
    const message = error instanceof Error ? error.message : String(error);
    const sqlState = typeof code === 'string' && /^[0-9A-Z]{5}$/.test(code) ? code : undefined;
    if (sqlState === undefined || /^(08|57P|53)/.test(sqlState)) throw new CliError(`PostgreSQL failed: ${message}`, EXIT.REDIS_UNAVAILABLE, { cause: error });
    throw new CliError(`migrate failed: ${message}${code === '42501' ? ' (this role may not create the schema: run it as one that may)' : ''}`, EXIT.INTERNAL, { cause: error });
  } finally {
    await pool.end().catch(() => {});
  }
}

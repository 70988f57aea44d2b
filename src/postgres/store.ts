/**
 * The PostgreSQL store: every operation is a SQL function of holdfast's schema, named after the operation
 * (`lock/acquire` → `<schema>.lock_acquire(keys, args)`), called in one statement through the user's own pool (no
 * session state, no named prepared statement: any pool and a transaction-mode PgBouncer serve it). Waiters are woken
 * by `LISTEN`/`NOTIFY` on one connection of the store's own; where that connection cannot hear (a transaction-mode
 * pooler, or `listen: false`), they poll with the one backoff policy, and the store says so once.
 *
 * node-postgres is never imported here: the store uses the pool it is given, and opens its listening connection with
 * that pool's own `Client` class and options.
 *
 * @module
 */
import type { ConnectionDiagnosis, RedisSubscriber, ScriptArgs } from '../client.js';
import type { HoldfastWarning } from '../core.js';
import { PostgresConnectionError, RedisConnectionError, ScriptError } from '../errors.js';
import { withTimeout, type Diagnosable, type ScriptDef } from '../script.js';
import type { Store } from '../store.js';
import { PgListener, type ListenClient } from './listen.js';
import { cannotInstall, installedVersion, installSchema, quoteIdent, upToDate, type Queryable } from './schema.js';
import { SQL_OPERATIONS } from './sql.gen.js';

/**
 * What holdfast needs of a node-postgres `Pool` (`pg` ≥ 8): `query`, `connect` (for installing the schema in one
 * transaction), and its `Client` class and `options` (for the listening connection).
 */
export interface PostgresPool {
  query(text: string, values?: unknown[]): Promise<{ rows: Record<string, unknown>[] }>;
  connect(): Promise<Queryable & { release(error?: Error | boolean): void }>;
  /** The pool's client class (node-postgres keeps it on every pool). */
  readonly Client?: new (options: unknown) => ListenClient;
  /** The pool's connection options (node-postgres keeps them on every pool). */
  readonly options?: unknown;
}

/** True for an object that looks like a node-postgres pool. */
export function isPostgresPool(value: unknown): value is PostgresPool {
  if (typeof value !== 'object' || value === null) return false;
  const v = value as Partial<PostgresPool>;
  return typeof v.query === 'function' && typeof v.connect === 'function';
}

/** Settings of a {@link PostgresStore}. */
export interface PostgresStoreOptions {
  schema: string;
  /** False: never `LISTEN`; waiters poll. */
  listen: boolean;
  /** Tells the user about the store (the client's `warning` event). */
  warn: (warning: HoldfastWarning) => void;
}

/** SQLSTATE classes and codes that mean "the server could not answer now": connection trouble, not a refusal. */
const TRANSIENT = /^(08|53|57P|40|58)/;

/** The PostgreSQL store. */
export class PostgresStore implements Store, Diagnosable {
  readonly kind = 'postgres';
  readonly server = 'PostgreSQL';
  readonly #pool: PostgresPool;
  readonly #schema: string;
  readonly #options: PostgresStoreOptions;
  /** The statement of each operation, built on first use. */
  readonly #statements = new Map<string, string>();
  /** `true` once the schema is known to be installed; else the check (or install) under way. */
  #ready: true | Promise<void> | undefined;
  #listener: PgListener | undefined;
  /** Set once a listening connection was found deaf: later ones would be too. */
  #deaf = false;
  #lastError: Error | undefined;

  constructor(pool: PostgresPool, options: PostgresStoreOptions) {
    this.#pool = pool;
    this.#schema = options.schema;
    this.#options = options;
  }

  /** The schema's name. */
  get schema(): string {
    return this.#schema;
  }

  /** True while waiters poll (see `Store.polling`). */
  get polling(): boolean {
    return !this.#options.listen || this.#deaf || (this.#listener?.polling ?? false);
  }

  /** How waiters are woken: `notify` (LISTEN/NOTIFY) or `polling`. */
  get wakeups(): 'notify' | 'polling' {
    return this.polling ? 'polling' : 'notify';
  }

  connectionError(message: string, options?: { cause?: unknown }): RedisConnectionError {
    return new PostgresConnectionError(message, options);
  }

  diagnose(): ConnectionDiagnosis | undefined {
    const cause = this.#lastError;
    return cause ? { state: `PostgreSQL: ${cause.message}`, cause } : undefined;
  }

  run<A extends ScriptArgs, R>(op: ScriptDef<A, R>, keys: readonly string[], args: NoInfer<A>, timeoutMs: number): Promise<NoInfer<R>> {
    const statement = this.#statement(op.name);
    if (statement === undefined) {
      return Promise.reject(new TypeError(`${op.name.split('/')[0] ?? op.name} is not available on PostgreSQL: it runs on Redis only (operation ${op.name})`));
    }
    const what = `operation ${op.name}`;
    const values = [keys, args.map(String)];
    const call = (): Promise<R> =>
      withTimeout(this.#pool.query(statement, values), timeoutMs, what, undefined, this).then(
        (result) => result.rows[0]?.r as R,
        (error: unknown) => {
          throw this.#toError(error, what);
        },
      );
    if (this.#ready === true) return call();
    return withTimeout(this.#ensureSchema(), timeoutMs, 'installing the schema', undefined, this).then(call, (error: unknown) => {
      throw this.#toError(error, 'installing the schema');
    });
  }

  command(args: readonly string[]): Promise<unknown> {
    return Promise.reject(new TypeError(`the Redis command ${args[0] ?? ''} is not available on PostgreSQL`));
  }

  createSubscriber(onMessage: (channel: string, message: string) => void): Promise<RedisSubscriber> {
    if (!this.#options.listen || this.#deaf) {
      this.#warnPolling('listen: false was asked for');
      return Promise.resolve(pollingSubscriber);
    }
    const listener = new PgListener(this.#pool, this.#schema, onMessage, (why) => {
      this.#deaf = true;
      this.#warnPolling(why);
    });
    this.#listener = listener;
    // subscribing registers the channel in the schema's listener table: the schema is installed first (a wait can
    // subscribe before any operation ran, e.g. waitUntilFree)
    const ready = this.#ready === true ? Promise.resolve() : this.#ensureSchema().catch((error: unknown) => {
      throw this.#toError(error, 'installing the schema');
    });
    return ready.then(() => listener.start()).then(() => listener);
  }

  async close(): Promise<void> {
    await this.#listener?.close();
  }

  #warned = false;
  #warnPolling(why: string): void {
    if (this.#warned) return;
    this.#warned = true;
    this.#options.warn({
      code: 'POLLING',
      message: `holdfast on PostgreSQL: waiters poll instead of being woken by NOTIFY (${why}); a release reaches a waiter within its next poll (at most 200 ms)`,
    });
  }

  /** `SELECT <schema>.<op>($1, $2)`, or undefined when the schema has no such operation. */
  #statement(name: string): string | undefined {
    let statement = this.#statements.get(name);
    if (statement !== undefined) return statement;
    const fn = name.replace(/[/-]/g, '_');
    if (!SQL_OPERATIONS.has(fn)) return undefined;
    statement = `SELECT ${quoteIdent(this.#schema)}.${fn}($1::text[], $2::text[]) AS r`;
    this.#statements.set(name, statement);
    return statement;
  }

  /** Installs the schema when it is missing or older (once per store; a failure is tried again by the next call). */
  #ensureSchema(): Promise<void> {
    if (this.#ready === true) return Promise.resolve();
    this.#ready ??= (async () => {
      const pool = this.#pool;
      if (!upToDate(await installedVersion(pool, this.#schema))) {
        const client = await pool.connect();
        try {
          await installSchema(client, this.#schema);
        } catch (error) {
          client.release();
          // a role without the right to create it is told what to run instead
          throw (error as { code?: unknown }).code === '42501' ? cannotInstall(this.#schema, error) : error;
        }
        client.release();
      }
      this.#ready = true;
    })().catch((error: unknown) => {
      this.#ready = undefined;
      throw error;
    });
    return this.#ready;
  }

  /** A node-postgres error as a holdfast error: connection trouble, or a refusal by the server. */
  #toError(error: unknown, what: string): Error {
    if (error instanceof RedisConnectionError || error instanceof ScriptError || error instanceof TypeError) return error;
    const message = error instanceof Error ? error.message : String(error);
    const code = (error as { code?: unknown }).code;
    if (typeof code === 'string' && /^[0-9A-Z]{5}$/.test(code) && !TRANSIENT.test(code)) {
      if (code === '42883' || code === '3F000' || code === '42P01') {
        return new ScriptError(`${what}: holdfast's schema "${this.#schema}" is not (fully) installed: ${message}. Run npx holdfast migrate --postgres <url> --schema ${this.#schema}`, { cause: error });
      }
      return new ScriptError(`${what}: PostgreSQL replied with an error: ${message} (${code})`, { cause: error });
    }
    if (error instanceof Error) this.#lastError = error;
    return new PostgresConnectionError(`${what}: ${message}`, { cause: error });
  }
}

/** The subscriber of a store that does not listen: subscriptions succeed, and nothing is ever delivered. */
const pollingSubscriber: RedisSubscriber = {
  subscribe: () => Promise.resolve(),
  unsubscribe: () => Promise.resolve(),
  close: () => Promise.resolve(),
};

/**
 * The wake-up channel of the PostgreSQL store: one connection of its own (opened with the pool's `Client` class and
 * options, never taken from the pool) that `LISTEN`s on the schema's channel. Operations `NOTIFY` it with
 * `<message> <channel>` (see `notify` in sql/base.sql); each notification goes to the waiters of its channel.
 *
 * Whether a notification reaches it is checked once, when it starts: it sends itself a probe. Behind a
 * transaction-mode pooler (PgBouncer) the `LISTEN` holds only for the transaction it ran in, and the probe never
 * arrives: the channel then delivers nothing and says so (`polling`), and waiters poll. A connection lost later is
 * opened again with the backoff policy (waiters poll meanwhile); since notifications sent while it was away are lost,
 * every waiter is woken once it is back, to look again.
 *
 * @module
 */
import { randomBytes } from 'node:crypto';
import type { RedisSubscriber } from '../client.js';
import { backoff, LISTEN_BACKOFF } from '../internal/backoff.js';
import { quoteIdent } from './schema.js';

/** What the listener needs of a node-postgres `Client`. */
export interface ListenClient {
  connect(): Promise<unknown>;
  query(text: string, values?: unknown[]): Promise<unknown>;
  on(event: 'notification', listener: (message: { channel: string; payload?: string | undefined }) => void): unknown;
  on(event: 'error' | 'end', listener: (error?: Error) => void): unknown;
  end(): Promise<unknown>;
}

/** How long a registration lives unless refreshed (it is refreshed every third of it while the connection lives). */
const REGISTRATION_TTL_MS = 30_000;

/** How long a probe notification may take to come back before the channel is judged deaf. */
const PROBE_MS = 2000;

export class PgListener implements RedisSubscriber {
  readonly #channels = new Set<string>();
  #client: ListenClient | undefined;
  #started: Promise<void> | undefined;
  #closed = false;
  /** True while nothing can be delivered (deaf, or reconnecting). */
  polling = false;
  #probe: { id: string; arrived: () => void } | undefined;
  /** This connection's id in the registrations (see `subscribe`). */
  readonly #id = randomBytes(12).toString('base64url');
  #refresh: NodeJS.Timeout | undefined;
  #deafened = false;

  constructor(
    private readonly pool: { query(text: string, values?: unknown[]): Promise<unknown>; readonly Client?: new (options: unknown) => ListenClient; readonly options?: unknown },
    private readonly schema: string,
    private readonly onMessage: (channel: string, message: string) => void,
    private readonly onDeaf: (why: string) => void,
  ) {}

  /** Connects, listens and checks that a notification arrives; resolves either way (deaf: polling). */
  start(): Promise<void> {
    this.#started ??= this.#open(true).catch((error: unknown) => {
      this.#started = undefined; // the next subscription tries again
      throw error;
    });
    return this.#started;
  }

  async #open(probe: boolean): Promise<void> {
    this.polling = true;
    const { Client, options } = this.pool;
    if (typeof Client !== 'function') {
      this.#deaf('the pool given has no Client class to open a listening connection with');
      return;
    }
    const client = new Client(options);
    client.on('error', (error) => this.#lost(client, error));
    client.on('end', () => this.#lost(client));
    client.on('notification', (n) => this.#deliver(n.payload));
    await client.connect();
    if (this.#closed) {
      await client.end().catch(() => {});
      return;
    }
    this.#client = client;
    await client.query(`LISTEN ${quoteIdent(this.schema)}`);
    if (probe) {
      // until a notification is seen to arrive, waiters poll: the check runs beside them, not before them
      this.polling = true;
      void this.#check(client).catch(() => {});
    }
  }

  /** Sends a probe through the pool and waits for it here: deaf when it does not come. */
  async #check(client: ListenClient): Promise<void> {
    const id = randomBytes(9).toString('base64url');
    const arrived = new Promise<boolean>((resolve) => {
      const timer = setTimeout(() => resolve(false), PROBE_MS);
      timer.unref();
      this.#probe = {
        id,
        arrived: () => {
          clearTimeout(timer);
          resolve(true);
        },
      };
    });
    await this.pool.query('SELECT pg_notify($1, $2)', [this.schema, `?${id} `]);
    const heard = await arrived;
    this.#probe = undefined;
    if (heard) {
      if (this.#client === client) this.polling = false;
    } else {
      this.#client = undefined;
      await client.end().catch(() => {});
      this.#deaf(`a NOTIFY sent through the pool did not reach the LISTEN connection within ${PROBE_MS} ms: a transaction-mode pooler such as PgBouncer?`);
    }
  }

  #deaf(why: string): void {
    this.polling = true;
    this.#deafened = true;
    if (this.#refresh) clearInterval(this.#refresh);
    this.pool.query(`SELECT ${quoteIdent(this.schema)}.listener_drop($1, $2)`, [this.#id, []]).catch(() => {});
    this.onDeaf(why);
  }

  #deliver(payload: string | undefined): void {
    if (payload === undefined) return;
    const space = payload.indexOf(' ');
    if (space < 0) return;
    const message = payload.slice(0, space);
    if (message.startsWith('?')) {
      if (this.#probe && message.slice(1) === this.#probe.id) this.#probe.arrived();
      return;
    }
    const channel = payload.slice(space + 1);
    if (this.#channels.has(channel)) this.onMessage(channel, message);
  }

  /** The listening connection dropped: waiters poll until it is back, then all of them look again. */
  #lost(client: ListenClient, _error?: Error): void {
    if (this.#client !== client || this.#closed) return;
    this.#client = undefined;
    this.polling = true;
    client.end().catch(() => {});
    void (async () => {
      for (let n = 1; !this.#closed; n++) {
        await backoff(LISTEN_BACKOFF, n);
        if (this.#closed) return;
        try {
          await this.#open(false);
          this.polling = false;
          break;
        } catch {
          /* still unreachable: try again */
        }
      }
      if (this.#closed) return;
      for (const channel of this.#channels) this.onMessage(channel, 'a');
    })();
  }

  /**
   * Listens on `channel`: once `LISTEN` runs, the channel is registered (see `listener` in sql/base.sql), so that
   * operations on it notify; resolves once registered, so that the waiter's next attempt cannot miss a wake-up.
   */
  async subscribe(channel: string): Promise<void> {
    this.#channels.add(channel);
    await this.start();
    if (this.polling && this.#deafened) return;
    await this.pool.query(`SELECT ${quoteIdent(this.schema)}.listener_add($1, $2, $3)`, [this.#id, [channel], REGISTRATION_TTL_MS]);
    this.#refresh ??= setInterval(() => {
      this.pool.query(`SELECT ${quoteIdent(this.schema)}.listener_add($1, $2, $3)`, [this.#id, [], REGISTRATION_TTL_MS]).catch(() => {});
    }, REGISTRATION_TTL_MS / 3);
    this.#refresh.unref();
  }

  async unsubscribe(channel: string): Promise<void> {
    this.#channels.delete(channel);
    await this.pool.query(`SELECT ${quoteIdent(this.schema)}.listener_drop($1, $2)`, [this.#id, [channel]]).catch(() => {});
  }

  async close(): Promise<void> {
    this.#closed = true;
    if (this.#refresh) clearInterval(this.#refresh);
    const client = this.#client;
    this.#client = undefined;
    await Promise.all([
      client?.end().catch(() => {}),
      this.pool.query(`SELECT ${quoteIdent(this.schema)}.listener_drop($1, $2)`, [this.#id, []]).catch(() => {}),
    ]);
  }
}

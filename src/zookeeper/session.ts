/**
 * One ZooKeeper session as the lock recipes see it: promise calls with a timeout, and the session's state.
 *
 * A ZooKeeper session ends on the server when the server hears nothing from the client for the session timeout;
 * the client learns of it only when it reconnects. So, like the Redis watchdog, the session is kept as a lease on
 * the client side: a heartbeat every third of the timeout, and a deadline = send time of the last answered request
 * + the negotiated timeout − a drift allowance. While a heartbeat goes unanswered (or the client says
 * `disconnected`) the session is *suspended*: locks are uncertain. Past the deadline, or when the server says
 * `expired`, the session is *lost*: every lock held in it is lost, the old client is closed (which deletes our
 * ephemeral nodes if the server still had the session: nothing is kept by surprise) and a fresh session serves
 * later calls. Nothing is ever re-acquired silently.
 *
 * @module
 */
import { EventEmitter } from 'node:events';
import zookeeper, { type Client, type Event, type Stat } from 'node-zookeeper-client';
import { ZooKeeperConnectionError } from '../errors.js';
import { now } from '../internal/clock.js';
import { driftOf } from '../internal/lease.js';

/** ZooKeeper error codes the recipes handle. */
export const ZK = {
  CONNECTION_LOSS: -4,
  OPERATION_TIMEOUT: -7,
  NO_NODE: -101,
  NODE_EXISTS: -110,
  NOT_EMPTY: -111,
  SESSION_EXPIRED: -112,
} as const;

/** The ZooKeeper error code of `error`, or undefined. */
export function zkCode(error: unknown): number | undefined {
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === 'number' ? code : undefined;
}

/** Why a session was given up. */
export type SessionLossReason = 'expired' | 'connection' | 'client-closed';

/** Settings of a session. */
export interface SessionSettings {
  connect: string;
  sessionTimeout: number;
  commandTimeout: number;
}

/** Events of a {@link Session}. `lost` carries the generation that was lost. */
export interface SessionEvents {
  suspended: [generation: number];
  reconnected: [generation: number];
  lost: [generation: number, reason: SessionLossReason];
}

/** The czxid of a node as a number (zxid = epoch << 32 | counter; exact while epoch < 2^21). */
export function czxidOf(stat: Stat): number {
  return Number(stat.czxid.readBigUInt64BE(0));
}

export class Session extends EventEmitter<SessionEvents> {
  #client: Client | undefined;
  #connecting: Promise<Client> | undefined;
  #generation = 0;
  #confirmedAt = 0;
  #timeout: number;
  #suspended = false;
  #closed = false;
  #heartbeat: NodeJS.Timeout | undefined;
  #deadlineTimer: NodeJS.Timeout | undefined;
  #beating = false;

  constructor(readonly settings: SessionSettings) {
    super();
    this.#timeout = settings.sessionTimeout;
  }

  /** Increases each time a session is lost and a new one is opened. */
  get generation(): number {
    return this.#generation;
  }
  /** True while the current session is suspended (disconnected or unanswered). */
  get suspended(): boolean {
    return this.#suspended;
  }
  /** The session timeout the server granted (ms). */
  get sessionTimeout(): number {
    return this.#timeout;
  }
  get closed(): boolean {
    return this.#closed;
  }

  /** The connected client of the current session (opens one if needed). */
  client(): Promise<Client> {
    if (this.#closed) return Promise.reject(new ZooKeeperConnectionError('the ZooKeeper client is closed'));
    if (this.#client) return Promise.resolve(this.#client);
    this.#connecting ??= this.#open().finally(() => (this.#connecting = undefined));
    return this.#connecting;
  }

  async #open(): Promise<Client> {
    const { connect, sessionTimeout, commandTimeout } = this.settings;
    const client = zookeeper.createClient(connect, { sessionTimeout, spinDelay: 100, retries: 0 });
    const generation = this.#generation;
    const sentAt = now();
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => {
        client.removeListener('connected', onConnected);
        client.close();
        reject(new ZooKeeperConnectionError(`could not connect to ZooKeeper at ${connect} within ${commandTimeout} ms`));
      }, Math.max(commandTimeout, 1000));
      const onConnected = (): void => {
        clearTimeout(timer);
        resolve();
      };
      client.once('connected', onConnected);
      client.connect();
    });
    if (this.#closed) {
      client.close();
      throw new ZooKeeperConnectionError('the ZooKeeper client is closed');
    }
    this.#client = client;
    this.#timeout = client.getSessionTimeout() || sessionTimeout;
    this.#suspended = false;
    this.#confirm(sentAt);
    client.on('disconnected', () => this.#onDisconnected(generation));
    client.on('connected', () => this.#onConnected(generation));
    client.on('expired', () => this.#lose(generation, 'expired'));
    this.#scheduleHeartbeat();
    return client;
  }

  #onDisconnected(generation: number): void {
    if (generation !== this.#generation || this.#suspended) return;
    this.#suspended = true;
    this.emit('suspended', generation);
  }

  #onConnected(generation: number): void {
    if (generation !== this.#generation) return;
    // Connected again to the same session: it was alive on the server a moment ago. Confirm with a heartbeat.
    void this.#beat();
  }

  /** Records that a request sent at `sentAt` was answered: the session lives at least until the new deadline. */
  #confirm(sentAt: number): void {
    if (sentAt < this.#confirmedAt) return;
    this.#confirmedAt = sentAt;
    const generation = this.#generation;
    this.#armDeadline(generation);
    if (this.#suspended && this.#client?.getState() === zookeeper.State.SYNC_CONNECTED) {
      this.#suspended = false;
      this.emit('reconnected', generation);
    }
  }

  /** Monotonic time until which the server cannot have expired the session (unless this process was paused). */
  get deadline(): number {
    return this.#confirmedAt + this.#timeout - driftOf(this.#timeout);
  }

  /**
   * Loses session `generation` at its deadline unless a confirmation moves it. A timer may fire a fraction of a
   * millisecond before the deadline by this clock (the event loop's clock is coarser): it then waits for the rest,
   * rather than never looking again (a silent server sends no other event that would).
   */
  #armDeadline(generation: number): void {
    clearTimeout(this.#deadlineTimer);
    this.#deadlineTimer = setTimeout(() => {
      if (generation !== this.#generation) return;
      if (now() >= this.deadline) this.#lose(generation, 'connection');
      else this.#armDeadline(generation);
    }, Math.max(1, Math.ceil(this.deadline - now())));
    this.#deadlineTimer.unref();
  }

  #scheduleHeartbeat(delay = Math.max(10, Math.floor(this.#timeout / 3))): void {
    clearTimeout(this.#heartbeat);
    if (this.#closed || !this.#client) return;
    this.#heartbeat = setTimeout(() => void this.#beat(), delay);
    this.#heartbeat.unref();
  }

  async #beat(): Promise<void> {
    if (this.#beating || this.#closed) return;
    const client = this.#client;
    if (!client) return;
    this.#beating = true;
    const generation = this.#generation;
    const sentAt = now();
    let failed = false;
    try {
      await this.call<Stat | null>((c, cb) => c.exists('/', cb), Math.max(10, Math.floor(this.#timeout / 3)), client);
      if (generation === this.#generation) this.#confirm(sentAt);
    } catch (error) {
      if (generation !== this.#generation) return;
      if (zkCode(error) === ZK.SESSION_EXPIRED) {
        this.#lose(generation, 'expired');
        return;
      }
      if (!this.#suspended) {
        this.#suspended = true;
        this.emit('suspended', generation);
      }
      // Unanswered for half the timeout: the connection is dead even if the socket looks open (a silent server):
      // make the client try another server, as ZooKeeper's Java client does past its read timeout.
      if (now() - this.#confirmedAt >= this.#timeout / 2) dropSocket(client);
      failed = true;
    } finally {
      this.#beating = false;
      // After a failure, try again soon: the deadline is closer than another third of the timeout.
      if (generation === this.#generation) this.#scheduleHeartbeat(failed ? Math.max(10, Math.floor(this.#timeout / 10)) : undefined);
    }
  }

  /** Gives up session `generation`: closes its client, tells the holders, and lets the next call open a new one. */
  #lose(generation: number, reason: SessionLossReason): void {
    if (generation !== this.#generation) return;
    this.#generation++;
    clearTimeout(this.#heartbeat);
    clearTimeout(this.#deadlineTimer);
    const client = this.#client;
    this.#client = undefined;
    this.#suspended = false;
    // Closing deletes our ephemeral nodes if the server still has the session: a lost lock is never kept by surprise.
    if (client) {
      try {
        client.close();
      } catch {
        /* already closed */
      }
    }
    this.emit('lost', generation, reason);
  }

  /**
   * Runs one ZooKeeper call with a timeout. Rejects with the ZooKeeper exception (`zkCode()` gives its code) or
   * a {@link ZooKeeperConnectionError} on timeout. A call that timed out may still be applied later. With
   * `generation`, the call runs only in that session (else rejects at once).
   */
  async call<T>(
    fn: (client: Client, cb: (error: unknown, result?: T) => void) => void,
    timeoutMs = this.settings.commandTimeout,
    onClient?: Client,
    generation?: number,
  ): Promise<T> {
    // A call that belongs to a session must not run in its successor (our nodes and watches died with it).
    if (generation !== undefined && generation !== this.#generation) throw new ZooKeeperConnectionError('the ZooKeeper session was lost');
    const client = onClient ?? (await this.client());
    if (generation !== undefined && generation !== this.#generation) throw new ZooKeeperConnectionError('the ZooKeeper session was lost');
    return new Promise<T>((resolve, reject) => {
      const timer = setTimeout(() => {
        reject(new ZooKeeperConnectionError(`ZooKeeper did not answer within ${timeoutMs} ms`));
      }, timeoutMs);
      fn(client, (error, result) => {
        clearTimeout(timer);
        if (error) reject(error);
        else resolve(result as T);
      });
    });
  }

  /** The current client's generation, opening a session if needed. */
  async current(): Promise<{ client: Client; generation: number }> {
    const client = await this.client();
    return { client, generation: this.#generation };
  }

  /** Closes the session (its ephemeral nodes go with it) and stops every timer. */
  close(): void {
    if (this.#closed) return;
    const generation = this.#generation;
    this.#closed = true;
    this.#lose(generation, 'client-closed');
  }
}

/** Forces node-zookeeper-client to drop its socket and reconnect (it has no read timeout of its own). */
function dropSocket(client: Client): void {
  const socket = (client as unknown as { connectionManager?: { socket?: { destroy?: () => void } } }).connectionManager?.socket;
  try {
    socket?.destroy?.();
  } catch {
    /* nothing to drop */
  }
}

/** Waits for a watch event, a timeout or an abort. Resolves 'event' | 'timeout'; rejects with the signal's reason. */
export function waitEvent(
  arm: (watcher: (event: Event) => void) => Promise<boolean>,
  timeoutMs: number | undefined,
  signal: AbortSignal | undefined,
  lost: AbortSignal,
): Promise<'event' | 'timeout' | 'gone'> {
  return new Promise((resolve, reject) => {
    let settled = false;
    let timer: NodeJS.Timeout | undefined;
    const finish = (fn: () => void): void => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      signal?.removeEventListener('abort', onAbort);
      lost.removeEventListener('abort', onLost);
      fn();
    };
    const onAbort = (): void => finish(() => reject(signal?.reason));
    const onLost = (): void => finish(() => reject(lost.reason));
    if (signal?.aborted) return onAbort();
    if (lost.aborted) return onLost();
    signal?.addEventListener('abort', onAbort, { once: true });
    lost.addEventListener('abort', onLost, { once: true });
    if (timeoutMs !== undefined) timer = setTimeout(() => finish(() => resolve('timeout')), Math.max(0, timeoutMs));
    arm(() => finish(() => resolve('event'))).then(
      (armed) => {
        if (!armed) finish(() => resolve('gone'));
      },
      (error) => finish(() => reject(error)),
    );
  });
}

/**
 * The ZooKeeper holdfast client: the same locks as the Redis client, on a quorum-replicated store.
 *
 * @module
 */
import { EventEmitter } from 'node:events';
import type { Stat } from 'node-zookeeper-client';
import { type LockLostError, StaleTokenError } from '../errors.js';
import type { ReleaseEvent } from '../internal/events.js';
import { checkDuration, checkInt, checkKnownKeys, checkName, checkOptions } from '../internal/validate.js';
import type { ElectionOptions } from '../primitives/election.js';
import { ZkElection } from './election.js';
import { ZkLock } from './lock.js';
import { ZkCore, encodeName, wrap } from './queue.js';
import { ZkReadWriteLock } from './read-write-lock.js';
import { ZkSemaphore, checkPermits } from './semaphore.js';
import { ZK, zkCode, type SessionLossReason } from './session.js';

/** Options of {@link ZooKeeperHoldfast}. */
export interface ZooKeeperHoldfastOptions {
  /** The ensemble: `"host:port,host:port"` (an optional `/chroot` suffix is allowed). */
  connect: string;
  /**
   * The session timeout asked of the server, in ms (the server clamps it to 2–20 × its tickTime). A crashed
   * holder's locks free after about this long; a holder cut off for this long has lost its locks.
   * @default 10000
   */
  sessionTimeout?: number;
  /**
   * The znode under which holdfast keeps its queues (`<root>/lock/<name>`, `/rwlock/`, `/semaphore/`, `/fenced/`).
   * @default "/holdfast"
   */
  root?: string;
  /**
   * Longest wait for one ZooKeeper reply (and for the first connection), in ms.
   * @default 5000
   */
  commandTimeout?: number;
}

const OPTION_KEYS = ['connect', 'sessionTimeout', 'root', 'commandTimeout'] as const;

/** Events of a {@link ZooKeeperHoldfast} client. */
export interface ZooKeeperHoldfastEvents {
  /** A held lock or permit was lost (its `signal` aborted with the same error). */
  lockLost: [error: LockLostError];
  /** The session is suspended: every lock held in it is uncertain until `reconnected` (or lost). */
  suspended: [];
  /** The suspended session is confirmed alive again: its locks are still held. */
  reconnected: [];
  /** The session was given up (`expired` by the server, `connection`: unconfirmed for the session timeout). */
  sessionLost: [reason: SessionLossReason];
}

/**
 * The entry point of the ZooKeeper backend (`holdfast/zookeeper`). Create one per process; `close()` it on shutdown.
 *
 * @example
 * ```ts
 * import { ZooKeeperHoldfast } from 'holdfast/zookeeper';
 * const zk = new ZooKeeperHoldfast({ connect: 'zk1:2181,zk2:2181,zk3:2181' });
 * await using lock = await zk.lock('invoice:42').acquire({ timeout: 5000 });
 * await chargeCustomer({ fence: lock.token, signal: lock.signal });
 * ```
 */
export class ZooKeeperHoldfast extends EventEmitter<ZooKeeperHoldfastEvents> {
  /** @internal */
  readonly core: ZkCore;

  constructor(options: ZooKeeperHoldfastOptions) {
    super();
    if (options === undefined) throw new TypeError('options must be an object with a `connect` string');
    const opts = checkOptions<ZooKeeperHoldfastOptions>(options);
    checkKnownKeys(opts, OPTION_KEYS);
    const connect = checkName(opts.connect, 'options.connect');
    const root = opts.root ?? '/holdfast';
    if (typeof root !== 'string' || !/^(\/[^/\s]+)+$/.test(root)) throw new TypeError(`options.root must be an absolute znode path like "/holdfast", got ${String(root)}`);
    const sessionTimeout = checkDuration(opts.sessionTimeout ?? 10_000, 'options.sessionTimeout', 100);
    const commandTimeout = checkDuration(opts.commandTimeout ?? 5000, 'options.commandTimeout');
    this.core = new ZkCore({ connect, root, sessionTimeout, commandTimeout }, (error) => {
      if (this.listenerCount('lockLost') > 0) this.emit('lockLost', error);
    });
    const session = this.core.session;
    session.on('suspended', () => this.emit('suspended'));
    session.on('reconnected', () => this.emit('reconnected'));
    session.on('lost', (_gen, reason) => {
      if (reason !== 'client-closed') this.emit('sessionLost', reason);
    });
  }

  /** Connects now (otherwise the first call does). Rejects with `ZooKeeperConnectionError` if it cannot. */
  async connect(): Promise<void> {
    await this.core.session.client();
  }

  /** The session timeout the server granted (the asked one before the first connection). */
  get sessionTimeout(): number {
    return this.core.session.sessionTimeout;
  }

  /** A handle on the reentrant lock `name` (cheap; no ZooKeeper call). */
  lock(name: string): ZkLock {
    return new ZkLock(this.core, checkName(name));
  }

  /** `zk.lock(name).onRelease(listener)`. */
  onRelease(name: string, listener: (event: ReleaseEvent) => void): Promise<() => void> {
    return this.lock(name).onRelease(listener);
  }

  /** A handle on the read-write lock `name`. */
  readWriteLock(name: string): ZkReadWriteLock {
    return new ZkReadWriteLock(this.core, checkName(name));
  }

  /** A handle on the semaphore `name` with `permits` permits (every client must pass the same number). */
  semaphore(name: string, permits: number): ZkSemaphore {
    return new ZkSemaphore(this.core, checkName(name), checkPermits(permits));
  }

  /**
   * A handle on the leader election `name` (cheap; no ZooKeeper call): the interface of the Redis client's
   * `election()`, on Curator's `LeaderLatch` recipe. `close()` resigns every leadership of this client.
   */
  election(name: string, options?: ElectionOptions): ZkElection {
    return new ZkElection(this.core, checkName(name), options);
  }

  /**
   * A fenced write to a value kept in ZooKeeper (`<root>/fenced/<resource>`): accepted only if `token` is at least
   * the largest token accepted so far, checked and written atomically (compare-and-set on the znode version).
   * It shows the pattern a real resource should follow with the lock's czxid token.
   * @throws {StaleTokenError} when a larger token was already accepted
   */
  async fencedWrite(resource: string, token: number, value: string): Promise<void> {
    checkName(resource, 'resource');
    checkInt(token, 'token', 0);
    if (typeof value !== 'string') throw new TypeError(`value must be a string, got ${typeof value}`);
    const core = this.core;
    core.assertOpen();
    const path = `${core.settings.root}/fenced/${encodeName(resource)}`;
    const session = core.session;
    for (;;) {
      let current: { token: number; value: string } | undefined;
      let version = -1;
      try {
        const [data, stat] = await session.call<[Buffer, Stat]>((c, cb) => c.getData(path, (error, d, s) => cb(error, [d, s])));
        current = JSON.parse(data.toString()) as { token: number; value: string };
        version = stat.version;
      } catch (error) {
        if (zkCode(error) !== ZK.NO_NODE) throw wrap(error);
      }
      if (current && token < current.token) throw new StaleTokenError(resource, token, current.token);
      const data = Buffer.from(JSON.stringify({ token, value }));
      try {
        if (current) await session.call<Stat>((c, cb) => c.setData(path, data, version, cb));
        else {
          await core.ensureDir(`${core.settings.root}/fenced`);
          await session.call<string>((c, cb) => c.create(path, data, cb));
        }
        return;
      } catch (error) {
        const code = zkCode(error);
        // Someone wrote in between: read again and re-check.
        if (code !== ZK.NODE_EXISTS && code !== -103 /* BAD_VERSION */) throw wrap(error);
      }
    }
  }

  /** The value and token last accepted by {@link ZooKeeperHoldfast.fencedWrite}, or `null`. */
  async fencedRead(resource: string): Promise<{
    /** The newest token accepted. */
    token: number;
    /** The value written with it. */
    value: string;
  } | null> {
    checkName(resource, 'resource');
    const path = `${this.core.settings.root}/fenced/${encodeName(resource)}`;
    try {
      const data = await this.core.session.call<Buffer>((c, cb) => c.getData(path, cb));
      return JSON.parse(data.toString()) as { token: number; value: string };
    } catch (error) {
      if (zkCode(error) === ZK.NO_NODE) return null;
      throw wrap(error);
    }
  }

  /** True once `close()` was called. */
  get closed(): boolean {
    return this.core.closed;
  }

  /** Releases every lock this client holds and closes the session (its ephemeral nodes go with it). Idempotent. */
  close(): Promise<void> {
    return this.core.close();
  }

  /** `await using zk = new ZooKeeperHoldfast(...)` closes it at the end of the scope. */
  [Symbol.asyncDispose](): Promise<void> {
    return this.close();
  }
}

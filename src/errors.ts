/**
 * Every error holdfast throws on purpose is a {@link HoldfastError} with a stable string `code`.
 * Bad arguments are the exception: they are plain `TypeError` / `RangeError`, thrown before any Redis call.
 *
 * @module
 */

const BRAND = Symbol.for('holdfast.error');

/** The stable codes of holdfast's errors. Match on `error.code`, never on the message. */
export type HoldfastErrorCode =
  | 'LOCK_NOT_HELD'
  | 'ACQUIRE_TIMEOUT'
  | 'LOCK_LOST'
  | 'REDIS_CONNECTION'
  | 'POSTGRES_CONNECTION'
  | 'ZOOKEEPER_CONNECTION'
  | 'CLIENT_CLOSED'
  | 'UPGRADE_REFUSED'
  | 'QUORUM_NOT_REACHED'
  | 'REPLICATION_NOT_REACHED'
  | 'LOCK_BUSY'
  | 'STALE_TOKEN'
  | 'SCRIPT_ERROR'
  | 'LOAD_FAILED'
  | 'RELEASE_FAILED'
  | 'EVICTION_POLICY';

/** Options every holdfast error accepts. */
export interface HoldfastErrorOptions {
  /** The underlying error, if any. */
  cause?: unknown;
}

/**
 * The base class of holdfast's errors. `code` is stable across versions; `name` is the class name.
 * `isHoldfastError()` recognises instances even when two copies of the package are loaded (ESM and CJS).
 */
export class HoldfastError extends Error {
  /** A stable machine-readable code. */
  readonly code: HoldfastErrorCode;

  constructor(code: HoldfastErrorCode, message: string, options?: HoldfastErrorOptions) {
    super(message, options?.cause === undefined ? undefined : { cause: options.cause });
    this.code = code;
    Object.defineProperty(this, BRAND, { value: true });
  }

  /** The class name, e.g. `LockLostError` (also across package copies). */
  override get name(): string {
    return this.constructor.name;
  }
}

/** @internal Any rejection reason as an `Error` (for per-node results). */
export function toError(reason: unknown): Error {
  return reason instanceof Error ? reason : new Error(String(reason));
}

/** True when `value` is a holdfast error, from this or any other copy of the package. */
export function isHoldfastError(value: unknown): value is HoldfastError {
  return typeof value === 'object' && value !== null && (value as Record<symbol, unknown>)[BRAND] === true;
}

/** A release or extension by someone who does not hold the lock (any more). Code `LOCK_NOT_HELD`. */
export class LockNotHeldError extends HoldfastError {
  /** The lock's name. */
  readonly lockName: string;
  constructor(lockName: string, message?: string, options?: HoldfastErrorOptions) {
    super('LOCK_NOT_HELD', message ?? `lock "${lockName}" is not held by this owner`, options);
    this.lockName = lockName;
  }
}

/** A wait for a lock or permit ran out of time. Code `ACQUIRE_TIMEOUT`. */
export class AcquireTimeoutError extends HoldfastError {
  /** The lock's name. */
  readonly lockName: string;
  /** How long the caller was willing to wait, in ms. */
  readonly timeout: number;
  constructor(lockName: string, timeout: number, options?: HoldfastErrorOptions) {
    super('ACQUIRE_TIMEOUT', `timed out after ${timeout} ms waiting for "${lockName}"`, options);
    this.lockName = lockName;
    this.timeout = timeout;
  }
}

/** Why a held lock was lost. */
export type LockLostReason = 'expired' | 'renewal-failed' | 'taken-over' | 'client-closed' | 'connection' | 'release-failed';

/**
 * A held lock is no longer held: its lease ran out, a renewal was refused, or renewals could not reach Redis
 * before the lease would run out. This is the `reason` of a held lock's `signal`. Code `LOCK_LOST`.
 */
export class LockLostError extends HoldfastError {
  /** The lock's name. */
  readonly lockName: string;
  /** What happened. */
  readonly reason: LockLostReason;
  constructor(lockName: string, reason: LockLostReason, options?: HoldfastErrorOptions) {
    super('LOCK_LOST', `lock "${lockName}" was lost (${reason})`, options);
    this.lockName = lockName;
    this.reason = reason;
  }
}

/**
 * A release could not reach Redis (after its retries). The lock is not kept alive: renewal stopped at the first failed
 * attempt, the hold's `signal` aborted (reason `release-failed`), and the release goes on retrying in the background
 * until it lands or the lease has run out. So the lock is free by `freeBy` at the latest, whoever else waits for it.
 * Calling `release()` again retries the same request. Code `RELEASE_FAILED`; `cause` is the last connection error.
 */
export class ReleaseFailedError extends HoldfastError {
  /** The lock's name. */
  readonly lockName: string;
  /** The wall-clock time by which the lock is free in Redis at the latest (its last lease runs out). */
  readonly freeBy: Date;
  constructor(lockName: string, freeBy: Date, options?: HoldfastErrorOptions) {
    super(
      'RELEASE_FAILED',
      `the release of "${lockName}" could not reach Redis; it is no longer renewed and is free by ${freeBy.toISOString()} at the latest`,
      options,
    );
    this.lockName = lockName;
    this.freeBy = freeBy;
  }
}

/**
 * The Redis server's `maxmemory-policy` can evict holdfast's keys (every `volatile-*` policy can evict a held lock,
 * every `allkeys-*` policy a fencing counter too), and the client was told to refuse such a server
 * (`evictionPolicy: 'refuse'`). Code `EVICTION_POLICY`.
 */
export class EvictionPolicyError extends HoldfastError {
  /** The server's policy. */
  readonly policy: string;
  constructor(policy: string, options?: HoldfastErrorOptions) {
    super(
      'EVICTION_POLICY',
      `Redis runs with maxmemory-policy ${policy}, which can evict locks${policy.startsWith('allkeys') ? ' and fencing counters' : ''}: use noeviction (or a Redis that holds no evictable data)`,
      options,
    );
    this.policy = policy;
  }
}

/** Redis could not be reached, or did not answer within `commandTimeout`. Code `REDIS_CONNECTION`. */
export class RedisConnectionError extends HoldfastError {
  constructor(message: string, options?: HoldfastErrorOptions) {
    super('REDIS_CONNECTION', message, options);
  }
}

/**
 * PostgreSQL could not be reached or did not answer in time (the operation may still have run there). A subclass of
 * {@link RedisConnectionError}, so that code which handles a store that did not answer handles both; its own code is
 * `POSTGRES_CONNECTION`.
 */
export class PostgresConnectionError extends RedisConnectionError {
  override readonly code: HoldfastErrorCode = 'POSTGRES_CONNECTION';
}

/**
 * ZooKeeper could not be reached or did not answer in time, or the session a wait depended on was lost; also the
 * `reason` of a ZooKeeper held lock's `suspendedSignal`. Code `ZOOKEEPER_CONNECTION`.
 */
export class ZooKeeperConnectionError extends HoldfastError {
  constructor(message: string, options?: HoldfastErrorOptions) {
    super('ZOOKEEPER_CONNECTION', message, options);
  }
}

/** The holdfast client was closed. Code `CLIENT_CLOSED`. */
export class ClientClosedError extends HoldfastError {
  constructor(options?: HoldfastErrorOptions) {
    super('CLIENT_CLOSED', 'the holdfast client is closed', options);
  }
}

/** A holder of a read lock asked for the write lock of the same read-write lock. Code `UPGRADE_REFUSED`. */
export class UpgradeRefusedError extends HoldfastError {
  /** The lock's name. */
  readonly lockName: string;
  constructor(lockName: string, options?: HoldfastErrorOptions) {
    super(
      'UPGRADE_REFUSED',
      `"${lockName}": this owner holds the read lock and asked for the write lock; release the read lock first (an upgrade would deadlock)`,
      options,
    );
    this.lockName = lockName;
  }
}

/** A fenced write carried a token older than one already accepted. Code `STALE_TOKEN`. */
export class StaleTokenError extends HoldfastError {
  /** The token the write carried. */
  readonly token: number;
  /** The newest token the resource has accepted. */
  readonly current: number;
  constructor(resource: string, token: number, current: number, options?: HoldfastErrorOptions) {
    super('STALE_TOKEN', `write to "${resource}" with fencing token ${token} rejected: token ${current} was already accepted`, options);
    this.token = token;
    this.current = current;
  }
}

/** Redis answered a script with an error holdfast does not expect. Code `SCRIPT_ERROR`. */
export class ScriptError extends HoldfastError {
  constructor(message: string, options?: HoldfastErrorOptions) {
    super('SCRIPT_ERROR', message, options);
  }
}

/** What one Redis node of a {@link QuorumNotReachedError} answered. */
export interface NodeResult {
  /** The node's index in the list the Redlock was built with. */
  node: number;
  /**
   * `acquired`: the node granted (or extended / released) the lock for this owner; `busy`: another owner holds it
   * there; `not-held`: this owner does not hold it there (any more); `error`: no usable answer (see `error`).
   */
  status: 'acquired' | 'busy' | 'not-held' | 'error';
  /** The node's remaining lease of the other owner, for `busy`, in ms. */
  ttl?: number;
  /** Why the node gave no answer, for `error`. */
  error?: Error;
}

/**
 * A Redlock operation did not reach a majority of its nodes (acquire, extend or release). `nodes` says what each node
 * answered in the last attempt. Code `QUORUM_NOT_REACHED`.
 */
export class QuorumNotReachedError extends HoldfastError {
  /** The lock's name. */
  readonly lockName: string;
  /** What was attempted. */
  readonly operation: 'acquire' | 'extend' | 'release' | 'adopt';
  /** How many nodes had to agree. */
  readonly quorum: number;
  /** Per-node answers of the last attempt. */
  readonly nodes: readonly NodeResult[];
  /** Attempts made (acquire only; 1 otherwise). */
  readonly attempts: number;
  constructor(
    lockName: string,
    operation: 'acquire' | 'extend' | 'release' | 'adopt',
    quorum: number,
    nodes: readonly NodeResult[],
    attempts = 1,
    options?: HoldfastErrorOptions & { detail?: string },
  ) {
    const count = (s: NodeResult['status']): number => nodes.filter((n) => n.status === s).length;
    const summary = `acquired ${count('acquired')}, busy ${count('busy')}, not-held ${count('not-held')}, error ${count('error')}`;
    super(
      'QUORUM_NOT_REACHED',
      `redlock "${lockName}": ${operation} did not reach ${quorum} of ${nodes.length} nodes after ${attempts} attempt(s) (${summary})` +
        (options?.detail ? `: ${options.detail}` : ''),
      options,
    );
    this.lockName = lockName;
    this.operation = operation;
    this.quorum = quorum;
    this.nodes = nodes;
    this.attempts = attempts;
  }
}

/**
 * `WAIT` / `WAITAOF` after an acquisition did not reach the required number of replicas in time; the acquisition was
 * rolled back (released) before this was thrown. Code `REPLICATION_NOT_REACHED`.
 */
export class ReplicationNotReachedError extends HoldfastError {
  /** The lock's name. */
  readonly lockName: string;
  /** Replicas required. */
  readonly required: number;
  /** Replicas that acknowledged within the timeout. */
  readonly reached: number;
  constructor(lockName: string, required: number, reached: number, options?: HoldfastErrorOptions) {
    super('REPLICATION_NOT_REACHED', `"${lockName}": the acquisition reached ${reached} of ${required} required replica(s) in time and was rolled back`, options);
    this.lockName = lockName;
    this.required = required;
    this.reached = reached;
  }
}

/** What is known of a loader's error on another instance: enough to log or match on, not the object itself. */
export interface RemoteErrorInfo {
  /** The error's `name` (e.g. `"TypeError"`). */
  name: string;
  /** The error's `message`. */
  message: string;
  /** The error's `code`, when it had a string or number one. */
  code?: string | number;
}

/**
 * `getOrLoad` waited for another caller's load (in this or another process), and that load failed; or a failure
 * cached with `errorTtl` was read. The loading caller itself gets its loader's own error. Code `LOAD_FAILED`.
 */
export class LoadFailedError extends HoldfastError {
  /** The cache key. */
  readonly key: string;
  /** The loader's error as the loading instance saw it. */
  readonly remote: RemoteErrorInfo;
  constructor(key: string, remote: RemoteErrorInfo, options?: HoldfastErrorOptions) {
    super('LOAD_FAILED', `loading "${key}" failed: ${remote.name}: ${remote.message}`, options);
    this.key = key;
    this.remote = remote;
  }
}

/**
 * Redlock: one lock over N independent Redis masters, held while a majority of them hold it.
 *
 * Each node runs the same scripts as the single-Redis {@link Lock} (`lock/acquire`, `lock/renew`, `lock/release`), so
 * the keys are the same and a node can be inspected with the usual tools. On top:
 *
 * - an attempt is timed with the monotonic clock started before the first request; it succeeds only with a majority
 *   and a positive validity `lease − elapsed − drift` (drift = 1 % of the lease + 2 ms);
 * - after any failed attempt the lock is released on every node (also those that seemed to refuse or time out);
 * - attempts are retried after `retryDelay` plus a random jitter, so contenders do not split votes forever;
 * - the watchdog and `extend()` renew on every node and count only with a majority;
 * - fencing tokens take a second round: the token is the largest per-node counter of the quorum, and a majority
 *   must raise its counter to it while still holding the lock, so any later acquisition mints a larger token
 *   (see `docs/topologies.md` for when this fails: a node that loses its data).
 *
 * @module
 */
import { randomUUID } from 'node:crypto';
import { EventEmitter } from 'node:events';
import type { RedisTransport } from '../client.js';
import { closeHolds, type Closable } from '../core.js';
import { LiveSet } from '../internal/live-set.js';
import {
  ClientClosedError,
  LockNotHeldError,
  QuorumNotReachedError,
  RedisConnectionError,
  type LockLostError,
  type NodeResult,
  toError,
} from '../errors.js';
import { now } from '../internal/clock.js';
import { HoldTable, LateGrant, LeasedHeld, type Hold } from '../internal/hold.js';
import { traceAcquire } from '../internal/trace.js';
import { quorumAcquire, quorumParams, type QuorumAttempt } from '../internal/quorum.js';
import type { AcquireContext } from '../diagnostics.js';
import { driftOf, validityLeft } from '../internal/lease.js';
import { checkDuration, checkInt, checkKnownKeys, checkName, checkOptions, checkPrefix, optDuration } from '../internal/validate.js';
import { Keys } from '../keys.js';
import { scripts } from '../lua/scripts.gen.js';
import { runScript } from '../script.js';
import { decodeAcquire } from './lock.js';
import { Holdfast, toTransport } from '../holdfast.js';
import type { RedlockAcquireOptions, RedlockSettings } from './redlock-nodes.js';
import { RedlockSemaphore, type RedlockSemaphoreOptions } from './redlock-semaphore.js';

export type { RedlockAcquireOptions } from './redlock-nodes.js';

/** Options of {@link Redlock}. */
export interface RedlockOptions {
  /**
   * The independent masters, at least 1 (use an odd number ≥ 3 for fault tolerance): each an ioredis client, a
   * connected node-redis client, a {@link RedisTransport}, or a `Holdfast` (its client is used; its settings are not).
   * They must not replicate each other. holdfast never closes them.
   */
  redis: readonly unknown[];
  /**
   * Prepended to every key. Give each application its own.
   * @default "holdfast:"
   */
  prefix?: string;
  /**
   * Longest wait for one node's reply within an attempt, in ms. Keep it small against the lease, so a dead node costs
   * little validity; a node that does not answer in time counts as a refusal.
   * @default 200
   */
  nodeTimeout?: number;
  /**
   * How many times `acquire()` retries after a failed attempt (so it makes at most `retryCount + 1` attempts).
   * `Infinity` retries until the acquire's `timeout` or `signal`.
   * @default 10
   */
  retryCount?: number;
  /**
   * Base pause between attempts, in ms.
   * @default 200
   */
  retryDelay?: number;
  /**
   * Random extra pause added to each `retryDelay`, uniformly in `[0, retryJitter)` ms: it desynchronises contenders.
   * @default 100
   */
  retryJitter?: number;
  /**
   * The lease the watchdog keeps when `acquire()` is given no `lease`, in ms.
   * @default 30000
   */
  watchdogLease?: number;
  /**
   * How often the watchdog renews (by quorum), in ms. Must be less than `watchdogLease`.
   * @default watchdogLease / 3
   */
  watchdogInterval?: number;
  /**
   * How long a release request's retry-safety marker lives on each node, in ms.
   * @default 60000
   */
  releaseMarkerTtl?: number;
}

const OPTION_KEYS = ['redis', 'prefix', 'nodeTimeout', 'retryCount', 'retryDelay', 'retryJitter', 'watchdogLease', 'watchdogInterval', 'releaseMarkerTtl'] as const;

/** Options of {@link RedlockLock.adopt}. */
export interface RedlockAdoptOptions {
  /**
   * A fixed lease in ms, set at once: no watchdog.
   * @default undefined: this Redlock's watchdog takes over
   */
  lease?: number;
}

const ADOPT_KEYS = ['lease'] as const;

/** Events a {@link Redlock} emits. */
export interface RedlockEvents {
  /** A held Redlock was lost (its `signal` aborted with the same error). */
  lockLost: [error: LockLostError];
}

/** Turns a node given by the user into a transport (a `Holdfast` lends its transport). */
function nodeTransport(redis: unknown): RedisTransport {
  if (!(redis instanceof Holdfast)) return toTransport(redis);
  const transport = redis.core.store.transport;
  if (!transport) throw new TypeError(`a Redlock runs on independent Redis servers: a holdfast client on ${redis.core.store.kind} cannot be one of its nodes`);
  return transport;
}

/**
 * A lock over N independent Redis masters (the Redlock algorithm). Create one per set of masters and share it.
 *
 * @example
 * ```ts
 * const redlock = new Redlock({ redis: [a, b, c, d, e] });
 * await using lock = await redlock.lock('report:daily').acquire({ lease: 10_000 });
 * await writeReport({ fence: lock.token, signal: lock.signal });
 * ```
 */
export class Redlock extends EventEmitter<RedlockEvents> {
  /** @internal */
  readonly nodes: readonly RedisTransport[];
  /** @internal */
  readonly keys: Keys;
  /** @internal */
  readonly settings: Readonly<RedlockSettings>;
  /** @internal */
  readonly holds = new LiveSet<Closable>();
  /** How many nodes must agree: ⌊N/2⌋ + 1. */
  readonly quorum: number;
  readonly #clientId = randomUUID();
  #seq = 0;
  #closed = false;

  constructor(options: RedlockOptions) {
    super();
    const opts = checkOptions<RedlockOptions>(options);
    if (options === undefined) throw new TypeError('options must be an object with a `redis` array of clients');
    checkKnownKeys(opts, OPTION_KEYS);
    if (!Array.isArray(opts.redis) || opts.redis.length === 0) {
      throw new TypeError('options.redis must be a non-empty array of Redis clients (one per independent master)');
    }
    this.nodes = opts.redis.map((r: unknown, i) => {
      try {
        return nodeTransport(r);
      } catch (error) {
        throw new TypeError(`options.redis[${i}]: ${(error as Error).message}`, { cause: error });
      }
    });
    const prefix = checkPrefix(opts.prefix ?? 'holdfast:');
    this.keys = new Keys(prefix);
    const watchdogLease = checkDuration(opts.watchdogLease ?? 30_000, 'options.watchdogLease', 100);
    const watchdogInterval = checkDuration(opts.watchdogInterval ?? Math.floor(watchdogLease / 3), 'options.watchdogInterval', 10);
    if (watchdogInterval >= watchdogLease) {
      throw new RangeError(`options.watchdogInterval (${watchdogInterval}) must be less than options.watchdogLease (${watchdogLease})`);
    }
    this.settings = {
      nodeTimeout: checkDuration(opts.nodeTimeout ?? 200, 'options.nodeTimeout'),
      retryCount: opts.retryCount === Infinity ? Infinity : checkInt(opts.retryCount ?? 10, 'options.retryCount', 0),
      retryDelay: checkDuration(opts.retryDelay ?? 200, 'options.retryDelay', 0),
      retryJitter: checkDuration(opts.retryJitter ?? 100, 'options.retryJitter', 0),
      watchdogLease,
      watchdogInterval,
      releaseMarkerTtl: checkDuration(opts.releaseMarkerTtl ?? 60_000, 'options.releaseMarkerTtl', 1000),
    };
    this.quorum = Math.floor(this.nodes.length / 2) + 1;
  }

  /** A handle on the Redlock `name` (cheap; no Redis call). */
  lock(name: string): RedlockLock {
    return new RedlockLock(this, checkName(name));
  }

  /**
   * A handle on the Redlock semaphore `name` with `options.permits` permits over these nodes (cheap; no Redis call):
   * a permit is held while a majority holds it (see {@link RedlockSemaphore} for why it is built from permit slots).
   */
  semaphore(name: string, options: RedlockSemaphoreOptions): RedlockSemaphore {
    return new RedlockSemaphore(this, checkName(name), options);
  }

  /** True once `close()` was called. */
  get closed(): boolean {
    return this.#closed;
  }

  /** @internal */
  assertOpen(): void {
    if (this.#closed) throw new ClientClosedError();
  }

  /** @internal A fresh owner id per attempt: a late reply of an abandoned attempt can never pass for a later one. */
  newOwner(): string {
    return `${this.#clientId}:r${++this.#seq}`;
  }

  /** Releases every Redlock this instance holds (on every node) and stops their watchdogs. Idempotent. */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    await closeHolds(this.holds);
  }

  /** `await using redlock = new Redlock(...)` closes it at the end of the scope. */
  [Symbol.asyncDispose](): Promise<void> {
    return this.close();
  }
}

/** What one attempt came to. */
type AttemptResult = QuorumAttempt<HeldRedlock>;

/**
 * A handle on one Redlock name, from `redlock.lock(name)`. Not reentrant: every acquisition is a new owner.
 */
export class RedlockLock {
  readonly #table: HoldTable;

  /** @internal */
  constructor(
    /** The Redlock client this lock belongs to. */
    readonly redlock: Redlock,
    /** The lock's name. */
    readonly name: string,
  ) {
    const quorum = redlock.quorum;
    const n = redlock.nodes.length;
    this.#table = new HoldTable(
      {
        name,
        kind: 'redlock',
        renew: async (owner, leaseMs) => {
          const outcome = await this.renewEverywhere(owner, leaseMs, this.#table.get(owner)?.token ?? 0);
          if (outcome.extended >= quorum) return true;
          // A majority said "not yours": no renewal can ever reach the quorum again.
          if (outcome.notHeld > n - quorum) return false;
          throw new QuorumNotReachedError(name, 'extend', quorum, outcome.results);
        },
        release: async (owner) => {
          const results = await this.releaseEverywhere(owner);
          const answered = results.filter((r) => r.status !== 'error').length;
          if (answered < quorum) throw new QuorumNotReachedError(name, 'release', quorum, results);
          return results.filter((r) => r.status === 'not-held').length > n - quorum ? -1 : 0;
        },
        releaseAll: (owner) => this.releaseEverywhere(owner),
        isTransient: (error) => error instanceof QuorumNotReachedError || error instanceof RedisConnectionError,
      },
      {
        holds: redlock.holds,
        watchdogInterval: redlock.settings.watchdogInterval,
        emitLost: (error) => {
          if (redlock.listenerCount('lockLost') > 0) redlock.emit('lockLost', error);
        },
      },
    );
  }

  /**
   * Attempts until a majority grants the lock with positive validity, or the retry budget / `timeout` runs out.
   * @throws {QuorumNotReachedError} after `retryCount + 1` failed attempts (with the last attempt's per-node results)
   * @throws {AcquireTimeoutError} when `timeout` runs out first (its `cause` is the last attempt's QuorumNotReachedError)
   * @throws the signal's reason when `signal` aborts
   */
  async acquire(options?: RedlockAcquireOptions): Promise<HeldRedlock> {
    return (await traceAcquire('redlock', this.name, options, (trace) => this.#acquire(options, false, trace))) as HeldRedlock;
  }

  /**
   * One attempt: the held lock, or `null` when the lock is held elsewhere (a majority answered, but not enough granted).
   * @throws {QuorumNotReachedError} when too few nodes answered at all (the lock could not be judged)
   */
  tryAcquire(options?: Omit<RedlockAcquireOptions, 'timeout'>): Promise<HeldRedlock | null> {
    return traceAcquire('redlock', this.name, options, (trace) => this.#acquire(options, true, trace));
  }

  /** Runs `fn` while holding the lock and releases it afterwards, also when `fn` throws. */
  async withLock<T>(fn: (held: HeldRedlock) => Promise<T> | T, options?: RedlockAcquireOptions): Promise<T> {
    if (typeof fn !== 'function') throw new TypeError(`fn must be a function, got ${typeof fn}`);
    const held = await this.acquire(options);
    try {
      return await fn(held);
    } finally {
      await held[Symbol.asyncDispose]();
    }
  }

  /**
   * Takes over the Redlock of owner `ownerId` (`held.owner` of a lock acquired elsewhere): same keys, same token, no
   * second hold; the lease (watchdog or `options.lease`) is set on every node that holds it. Succeeds only when a
   * majority holds it for that owner, with validity computed as for `acquire()`. See docs/redlock.md.
   * @throws {LockNotHeldError} when a majority answered that `ownerId` does not hold it
   * @throws {QuorumNotReachedError} when too few nodes answered, or no validity was left
   */
  async adopt(ownerId: string, options?: RedlockAdoptOptions): Promise<HeldRedlock> {
    const owner = checkName(ownerId, 'ownerId');
    const opts = checkOptions<RedlockAdoptOptions>(options);
    checkKnownKeys(opts, ADOPT_KEYS);
    const fixedLease = optDuration(opts.lease, 'options.lease', 10);
    const redlock = this.redlock;
    redlock.assertOpen();
    const { nodes, keys, quorum, settings } = redlock;
    const leaseMs = fixedLease ?? settings.watchdogLease;
    const lockKeys = [keys.lock(this.name)];
    // The clock starts before the first request: every lease was set at or after `start`.
    const start = now();
    const replies = await Promise.allSettled(
      nodes.map((node) => runScript(node, scripts['redlock/adopt'], lockKeys, [owner, leaseMs], settings.nodeTimeout)),
    );
    let token = 0;
    const results: NodeResult[] = replies.map((reply, node): NodeResult => {
      if (reply.status === 'rejected') return { node, status: 'error', error: toError(reply.reason) };
      const [held, nodeToken] = reply.value;
      if (held === 1) {
        // the fencing round left the Redlock's token on a majority; a node outside it holds a smaller one
        token = Math.max(token, Number(nodeToken ?? 0));
        return { node, status: 'acquired' };
      }
      return { node, status: held === -1 ? 'busy' : 'not-held' };
    });
    const holding = results.filter((r) => r.status === 'acquired').length;
    const validity = validityLeft(start, leaseMs);
    if (holding < quorum) {
      const refused = results.filter((r) => r.status === 'busy' || r.status === 'not-held').length;
      if (refused > nodes.length - quorum) throw new LockNotHeldError(this.name, `redlock "${this.name}" is not held by the owner to adopt on a majority of nodes`);
      throw new QuorumNotReachedError(this.name, 'adopt', quorum, results);
    }
    if (validity <= 0) {
      const detail = `no validity left: the adoption took ${Math.round(now() - start)} ms of a ${leaseMs} ms lease (drift ${driftOf(leaseMs)} ms)`;
      throw new QuorumNotReachedError(this.name, 'adopt', quorum, results, 1, { detail });
    }
    // closed meanwhile: close() did not see this hold, and it is not ours to release; its lease runs out
    redlock.assertOpen();
    return this.#held(owner, token, start, leaseMs, validity, fixedLease === undefined, results);
  }

  async #acquire(options: RedlockAcquireOptions | undefined, single: boolean, trace: AcquireContext | undefined): Promise<HeldRedlock | null> {
    const run = quorumParams(this.redlock, options, single);
    return quorumAcquire(this.redlock, this.name, run, single, trace, () => this.#attempt(run.leaseMs, run.fixedLease === undefined));
  }

  /** One Redlock attempt: acquire round, fencing round, validity check; on failure, release everywhere. */
  async #attempt(leaseMs: number, watchdog: boolean): Promise<AttemptResult> {
    const redlock = this.redlock;
    const { nodes, keys, quorum } = redlock;
    const nodeTimeout = redlock.settings.nodeTimeout;
    const owner = redlock.newOwner();
    const lockKeys = [keys.lock(this.name), keys.fence(this.name)];
    const acquireKeys = [...lockKeys, keys.lockWaiters(this.name)];
    // The clock starts before the first request: every key was set at or after `start`.
    const start = now();
    const replies = await Promise.allSettled(
      nodes.map((node) => runScript(node, scripts['lock/acquire'], acquireKeys, [owner, leaseMs, '0'], nodeTimeout)),
    );
    const tokens: number[] = []; // the token each granting node minted
    const results: NodeResult[] = replies.map((reply, node) => {
      if (reply.status === 'rejected') return { node, status: 'error', error: toError(reply.reason) };
      const value = decodeAcquire(reply.value);
      if (!value.acquired) return { node, status: 'busy', ttl: value.pttl };
      tokens[node] = value.token;
      return { node, status: 'acquired' };
    });
    const granted = results.filter((r) => r.status === 'acquired').map((r) => r.node);
    // the engine's one validity rule (see `validityLeft`, `HoldTable.held`)
    const noValidity = (): string | undefined =>
      validityLeft(start, leaseMs) > 0
        ? undefined
        : `no validity left: the attempt took ${Math.round(now() - start)} ms of a ${leaseMs} ms lease (drift ${driftOf(leaseMs)} ms)`;
    // A majority that came too late is no lock: skip the fencing round (its owner checks would fail anyway).
    const late = granted.length >= quorum ? noValidity() : undefined;
    if (late !== undefined) {
      await this.#releaseEverywhere(owner);
      return { held: undefined, results, detail: late };
    }
    if (granted.length >= quorum) {
      const token = Math.max(...granted.map((i) => tokens[i] ?? 0));
      const raised = await Promise.allSettled(
        granted.map((i) => runScript(nodes[i] as RedisTransport, scripts['redlock/fence'], lockKeys, [owner, token], nodeTimeout)),
      );
      let fenced = 0;
      raised.forEach((reply, j) => {
        const node = granted[j] as number;
        if (reply.status === 'fulfilled' && reply.value === 1) fenced++;
        else if (reply.status === 'fulfilled') results[node] = { node, status: 'not-held' };
        else results[node] = { node, status: 'error', error: toError(reply.reason) };
      });
      const validity = validityLeft(start, leaseMs);
      if (fenced >= quorum && validity > 0) {
        try {
          return { held: this.#held(owner, token, start, leaseMs, validity, watchdog, results), results };
        } catch (error) {
          // the engine judged it at a later instant, past the deadline: it undid the grant everywhere
          if (!(error instanceof LateGrant)) throw error;
          await error.undone;
          return { held: undefined, results, detail: noValidity() ?? '' };
        }
      }
      await this.#releaseEverywhere(owner);
      return { held: undefined, results, detail: fenced < quorum ? `the fencing round reached ${fenced} node(s)` : noValidity() ?? '' };
    }
    await this.#releaseEverywhere(owner);
    return { held: undefined, results };
  }

  #held(owner: string, token: number, start: number, leaseMs: number, validity: number, watchdog: boolean, results: NodeResult[]): HeldRedlock {
    return new HeldRedlock(this.#table.held(owner, token, start, leaseMs, watchdog), validity, results);
  }

  /**
   * @internal `redlock/renew` on every node: extends `owner`'s lease, and takes the key back (same owner and `token`)
   * on a node that lost it, never where another owner holds it.
   */
  async renewEverywhere(owner: string, leaseMs: number, token: number): Promise<{ extended: number; notHeld: number; results: NodeResult[] }> {
    const { nodes, keys, settings } = this.redlock;
    const lockKeys = [keys.lock(this.name), keys.fence(this.name)];
    const replies = await Promise.allSettled(
      nodes.map((node) => runScript(node, scripts['redlock/renew'], lockKeys, [owner, leaseMs, token], settings.nodeTimeout)),
    );
    const results: NodeResult[] = replies.map((reply, node) => {
      if (reply.status === 'rejected') return { node, status: 'error', error: toError(reply.reason) };
      return Number(reply.value) >= 1 ? { node, status: 'acquired' } : { node, status: 'not-held' };
    });
    return {
      extended: results.filter((r) => r.status === 'acquired').length,
      notHeld: results.filter((r) => r.status === 'not-held').length,
      results,
    };
  }

  /** @internal `lock/release` (every hold of `owner`) on every node, whatever it answered before. */
  async releaseEverywhere(owner: string): Promise<NodeResult[]> {
    return this.#releaseEverywhere(owner);
  }

  async #releaseEverywhere(owner: string): Promise<NodeResult[]> {
    const { nodes, keys, settings } = this.redlock;
    const replies = await Promise.allSettled(
      nodes.map((node) =>
        runScript(
          node,
          scripts['lock/release'],
          [keys.lock(this.name), keys.lockWaiters(this.name)],
          [owner, '1'],
          settings.nodeTimeout,
        ),
      ),
    );
    return replies.map((reply, node): NodeResult => {
      if (reply.status === 'rejected') return { node, status: 'error', error: toError(reply.reason) };
      return Number(reply.value) >= 0 ? { node, status: 'acquired' } : { node, status: 'not-held' };
    });
  }
}

/**
 * A held Redlock. Release it once (`release()` or `await using`); a second release does nothing. `release()` rejects
 * with `LockNotHeldError` when the lock was lost before it, and with `ReleaseFailedError` when too few nodes answered
 * (its `cause` is the `QuorumNotReachedError`; the lock is no longer renewed and its keys expire with the lease).
 */
export class HeldRedlock extends LeasedHeld {
  /** @internal */
  constructor(
    hold: Hold,
    /** ms the lock was certainly valid for when `acquire()` returned: lease − elapsed − drift. */
    readonly validity: number,
    /** What each node answered in the winning attempt. */
    readonly nodes: readonly NodeResult[],
  ) {
    super(hold, 1);
  }

  /**
   * The fencing token: larger than the token of every acquisition that returned before this one started, as long as
   * no node lost its data (see docs/topologies.md).
   */
  get token(): number {
    return this.hold.token;
  }

  /**
   * Sets the lease to `leaseMs` from now on every node; counts only with a majority.
   * @throws {LockNotHeldError} when a majority no longer holds it for this owner
   * @throws {QuorumNotReachedError} when too few nodes answered (the lease still runs out on its own)
   */
  override extend(leaseMs: number): Promise<void> {
    if (optDuration(leaseMs, 'leaseMs', 10) === undefined) throw new TypeError('leaseMs must be a number of milliseconds, got undefined');
    return super.extend(leaseMs);
  }
}

/**
 * Redlock semaphores: a counting semaphore over the N independent Redis masters of a {@link Redlock}, held while a
 * majority holds it. `redlock.semaphore(name, { permits })`; `acquire(n)` takes n permits (one or several).
 *
 * Why permit slots, not a counter per node. With a counter (or a set of holders) of `permits` per node and a majority
 * quorum, more holders than permits can each hold a majority: with 5 nodes and 2 permits, A on nodes {0, 1, 2}, B on
 * {0, 3, 4} and C on {1, 2, 3} fit under every node's limit of 2, and all three hold a majority. A counter is only safe
 * with a quorum of more than `N × permits / (permits + 1)` nodes, which for 2 permits over 5 nodes is 4 and tolerates
 * one node down, and for 4 or more permits needs every node. So holdfast splits the semaphore into `permits` slots,
 * each a Redlock lock of its own (one key per slot and node, the owner id as value, the lease as TTL): a permit is a
 * slot won on a majority with validity left. Two majorities always share a node, so a slot has at most one holder,
 * and at most `permits` permits are held at once, with the majority quorum, a minority down tolerated, and Redlock's
 * assumptions (clocks that drift little, a node that restarts keeps its data or stays down for one lease).
 *
 * An attempt offers every node the same order of slots (a random rotation, so that contenders start apart); each node
 * takes the first `n` free ones, all or none. The slots that a majority gave are the permits (n of them are kept; any
 * extra, and every slot of a failed attempt, are released on every node). Validity, retries, jitter, the watchdog by
 * quorum and `close()` are those of the Redlock; the lease and the release rule are the hold engine's.
 *
 * Every client of one semaphore must be given the same `permits` (it is not stored in Redis).
 *
 * @module
 */
import type { RedisTransport, ScriptArgs } from '../client.js';
import { QuorumNotReachedError, RedisConnectionError, type NodeResult, toError } from '../errors.js';
import { now } from '../internal/clock.js';
import { HoldTable, LateGrant, LeasedHeld, type Hold } from '../internal/hold.js';
import { driftOf, validityLeft } from '../internal/lease.js';
import { traceAcquire } from '../internal/trace.js';
import { quorumAcquire, quorumParams, type QuorumAttempt } from '../internal/quorum.js';
import type { AcquireContext } from '../diagnostics.js';
import { checkInt, checkKnownKeys, checkOptions, optDuration } from '../internal/validate.js';
import { scripts } from '../lua/scripts.gen.js';
import { runScript, type ScriptDef } from '../script.js';
import type { RedlockAcquireOptions, RedlockNodes } from './redlock-nodes.js';

/** Most permits a Redlock semaphore may have: every attempt sends one key per permit slot to each node. */
export const MAX_REDLOCK_PERMITS = 1024;

/** Options of `redlock.semaphore(name, options)`. */
export interface RedlockSemaphoreOptions {
  /** How many permits the semaphore has (its slots), 1 to {@link MAX_REDLOCK_PERMITS}. Every client must give the same number. */
  permits: number;
}

const OPTION_KEYS = ['permits'] as const;

/** What one attempt came to. */
type AttemptResult = QuorumAttempt<HeldRedlockPermits>;

/**
 * A counting semaphore over the nodes of a {@link Redlock}, from `redlock.semaphore(name, { permits })`. A cheap
 * handle. Not reentrant: every acquisition is a new owner.
 *
 * @example
 * ```ts
 * const redlock = new Redlock({ redis: [a, b, c, d, e] });
 * const exports = redlock.semaphore('exports', { permits: 3 });
 * await using permits = await exports.acquire(1, { lease: 30_000 });
 * await runExport({ signal: permits.signal });
 * ```
 */
export class RedlockSemaphore {
  /** How many permits the semaphore has. */
  readonly permits: number;
  readonly #table: HoldTable;
  /** owner → the slots it holds (read by renewals and releases). */
  readonly #slots = new Map<string, number[]>();

  /** @internal */
  constructor(
    /** The Redlock whose nodes hold this semaphore. */
    readonly redlock: RedlockNodes,
    /** The semaphore's name. */
    readonly name: string,
    options: RedlockSemaphoreOptions,
  ) {
    const opts = checkOptions<RedlockSemaphoreOptions>(options);
    if (options === undefined) throw new TypeError('options must be an object with `permits`');
    checkKnownKeys(opts, OPTION_KEYS);
    this.permits = checkInt(opts.permits, 'options.permits', 1, MAX_REDLOCK_PERMITS);
    const quorum = redlock.quorum;
    const n = redlock.nodes.length;
    this.#table = new HoldTable(
      {
        name,
        kind: 'redlock semaphore',
        renew: async (owner, leaseMs) => {
          const slots = this.#slots.get(owner) ?? [];
          const results = await this.#everywhere(scripts['qsem/renew'], slots, [owner, leaseMs], (held) => held === slots.length);
          const extended = results.filter((r) => r.status === 'acquired').length;
          if (extended >= quorum) return true;
          if (results.filter((r) => r.status === 'not-held').length > n - quorum) return false;
          throw new QuorumNotReachedError(name, 'extend', quorum, results);
        },
        release: async (owner) => {
          const results = await this.#releaseEverywhere(owner, this.#slots.get(owner) ?? []);
          const answered = results.filter((r) => r.status !== 'error').length;
          if (answered < quorum) throw new QuorumNotReachedError(name, 'release', quorum, results);
          this.#slots.delete(owner);
          return results.filter((r) => r.status === 'not-held').length > n - quorum ? -1 : 0;
        },
        releaseAll: async (owner) => {
          const results = await this.#releaseEverywhere(owner, this.#slots.get(owner) ?? []);
          if (results.every((r) => r.status !== 'error')) this.#slots.delete(owner);
          return results;
        },
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
   * Takes `permits` permits: attempts until a majority grants them with validity left, or the retry budget /
   * `timeout` runs out.
   * @param permits how many, at most the semaphore's @default 1
   * @throws {QuorumNotReachedError} after `retryCount + 1` failed attempts (with the last attempt's per-node results)
   * @throws {AcquireTimeoutError} when `timeout` runs out first (its `cause` is the last attempt's QuorumNotReachedError)
   * @throws the signal's reason when `signal` aborts
   */
  async acquire(permits = 1, options?: RedlockAcquireOptions): Promise<HeldRedlockPermits> {
    return (await traceAcquire('redlock-semaphore', this.name, options, (trace) => this.#acquire(permits, options, false, trace))) as HeldRedlockPermits;
  }

  /**
   * One attempt: the permits, or `null` when too few are free (a majority answered, but not enough granted).
   * @throws {QuorumNotReachedError} when too few nodes answered at all
   */
  tryAcquire(permits = 1, options?: Omit<RedlockAcquireOptions, 'timeout'>): Promise<HeldRedlockPermits | null> {
    return traceAcquire('redlock-semaphore', this.name, options, (trace) => this.#acquire(permits, options, true, trace));
  }

  /** Runs `fn` holding `permits` permits and gives them back afterwards, also when `fn` throws. */
  async withPermits<T>(fn: (held: HeldRedlockPermits) => Promise<T> | T, permits = 1, options?: RedlockAcquireOptions): Promise<T> {
    if (typeof fn !== 'function') throw new TypeError(`fn must be a function, got ${typeof fn}`);
    const held = await this.acquire(permits, options);
    try {
      return await fn(held);
    } finally {
      await held[Symbol.asyncDispose]();
    }
  }

  /**
   * How many permits are held on each node now (`null` for a node that did not answer): a node's view, not the
   * quorum's; for operators and tests.
   */
  async heldPerNode(): Promise<(number | null)[]> {
    this.redlock.assertOpen();
    const keys = this.#keys(Array.from({ length: this.permits }, (_, i) => i));
    const { nodes, settings } = this.redlock;
    const replies = await Promise.allSettled(nodes.map((node) => runScript(node, scripts['qsem/inspect'], keys, [], settings.nodeTimeout)));
    return replies.map((r) => (r.status === 'fulfilled' ? Number(r.value) : null));
  }

  async #acquire(permits: unknown, options: RedlockAcquireOptions | undefined, single: boolean, trace: AcquireContext | undefined): Promise<HeldRedlockPermits | null> {
    const want = checkInt(permits, 'permits', 1, this.permits);
    const run = quorumParams(this.redlock, options, single);
    return quorumAcquire(this.redlock, this.name, run, single, trace, () => this.#attempt(want, run.leaseMs, run.fixedLease === undefined));
  }

  /** One attempt: every node takes the first `want` free slots of one order; the slots a majority gave are ours. */
  async #attempt(want: number, leaseMs: number, watchdog: boolean): Promise<AttemptResult> {
    const redlock = this.redlock;
    const { nodes, quorum } = redlock;
    const owner = redlock.newOwner();
    const offset = Math.floor(Math.random() * this.permits);
    const order = Array.from({ length: this.permits }, (_, i) => (offset + i) % this.permits);
    const keys = this.#keys(order);
    this.#slots.set(owner, order); // until the attempt is decided, a release covers every slot offered
    const start = now();
    const replies = await Promise.allSettled(
      nodes.map((node) => runScript(node, scripts['qsem/acquire'], keys, [owner, leaseMs, want], redlock.settings.nodeTimeout)),
    );
    const votes = new Map<number, number>();
    const results: NodeResult[] = replies.map((reply, node) => {
      if (reply.status === 'rejected') return { node, status: 'error', error: toError(reply.reason) };
      const [ok, ...rest] = reply.value.map(Number);
      if (ok !== 1) return { node, status: 'busy', ttl: rest[0] ?? -1 };
      for (const i of rest) {
        const slot = order[i - 1] as number;
        votes.set(slot, (votes.get(slot) ?? 0) + 1);
      }
      return { node, status: 'acquired' };
    });
    // the slots a majority gave, in the attempt's order
    const won = order.filter((slot) => (votes.get(slot) ?? 0) >= quorum);
    const fail = async (detail?: string): Promise<AttemptResult> => {
      await this.#releaseEverywhere(owner, order);
      this.#slots.delete(owner);
      return detail === undefined ? { held: undefined, results } : { held: undefined, results, detail };
    };
    if (won.length < want) return fail(won.length > 0 ? `a majority gave ${won.length} of ${want} permit(s)` : undefined);
    const kept = won.slice(0, want);
    const extra = order.filter((slot) => !kept.includes(slot));
    if (extra.length > 0 && votes.size > kept.length) await this.#releaseEverywhere(owner, extra);
    // the engine's one validity rule (see `validityLeft`); `HoldTable.held` checks it once more as it records the hold
    const validity = validityLeft(start, leaseMs);
    const late = (): Promise<AttemptResult> =>
      fail(`no validity left: the attempt took ${Math.round(now() - start)} ms of a ${leaseMs} ms lease (drift ${driftOf(leaseMs)} ms)`);
    if (validity <= 0) return late();
    this.#slots.set(owner, kept);
    let hold: Hold;
    try {
      hold = this.#table.held(owner, 0, start, leaseMs, watchdog);
    } catch (error) {
      if (!(error instanceof LateGrant)) throw error;
      await error.undone;
      return late(); // releases every slot offered, as any failed attempt
    }
    return { held: new HeldRedlockPermits(hold, want, validity, results), results };
  }

  #keys(slots: readonly number[]): string[] {
    return slots.map((slot) => this.redlock.keys.redlockPermit(this.name, slot));
  }

  /** Runs a `qsem/*` script on every node; `ok(reply)` says whether a node's reply counts as `acquired`. */
  async #everywhere<A extends ScriptArgs>(script: ScriptDef<A, number>, slots: readonly number[], args: NoInfer<A>, ok: (reply: number) => boolean): Promise<NodeResult[]> {
    const { nodes, settings } = this.redlock;
    const keys = this.#keys(slots);
    const replies = await Promise.allSettled(nodes.map((node: RedisTransport) => runScript(node, script, keys, args, settings.nodeTimeout)));
    return replies.map((reply, node): NodeResult => {
      if (reply.status === 'rejected') return { node, status: 'error', error: toError(reply.reason) };
      return ok(Number(reply.value)) ? { node, status: 'acquired' } : { node, status: 'not-held' };
    });
  }

  /** `qsem/release` of `slots` on every node, whatever it answered before; a node that deleted none is `not-held`. */
  #releaseEverywhere(owner: string, slots: readonly number[]): Promise<NodeResult[]> {
    return this.#everywhere(scripts['qsem/release'], slots, [owner], (deleted) => deleted > 0);
  }
}

/**
 * Permits held on a Redlock semaphore. Release them once (`release()` or `await using`). `release()` rejects with
 * `LockNotHeldError` when they were lost before it, and with `ReleaseFailedError` when too few nodes answered.
 */
export class HeldRedlockPermits extends LeasedHeld {
  /** @internal */
  constructor(
    hold: Hold,
    /** How many permits this holds. */
    readonly permits: number,
    /** ms the permits were certainly valid for when `acquire()` returned: lease − elapsed − drift. */
    readonly validity: number,
    /** What each node answered in the winning attempt. */
    readonly nodes: readonly NodeResult[],
  ) {
    super(hold, 1);
  }

  /**
   * Sets the lease to `leaseMs` from now on every node; counts only with a majority.
   * @throws {LockNotHeldError} when a majority no longer holds them for this owner
   * @throws {QuorumNotReachedError} when too few nodes answered (the lease still runs out on its own)
   */
  override extend(leaseMs: number): Promise<void> {
    if (optDuration(leaseMs, 'leaseMs', 10) === undefined) throw new TypeError('leaseMs must be a number of milliseconds, got undefined');
    return super.extend(leaseMs);
  }
}

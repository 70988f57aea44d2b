/**
 * A hold of a ZooKeeper queue node (lock, read/write lock or permit) and the held object users get.
 *
 * @module
 */
import type { Closable } from '../core.js';
import { fingerprint, type PrimitiveKind } from '../diagnostics.js';
import { Held } from '../internal/held.js';
import { publishLost, type HeldFacts, type TracedHold } from '../internal/trace.js';
import { LockLostError, LockNotHeldError, type LockLostReason, ZooKeeperConnectionError } from '../errors.js';
import { ZK, zkCode, type SessionLossReason } from './session.js';
import { type Entry, type ZkCore, watchOwn, wrap } from './queue.js';
import { backoff, ZOOKEEPER_BACKOFF } from '../internal/backoff.js';

/** The state of a held ZooKeeper lock. */
export type ZkHoldState = 'held' | 'suspended' | 'lost' | 'released';

/**
 * One owner's hold of one queue node, shared by its reentrant acquisitions. Its hold count is its own: it changes only
 * through the methods below, each the one way a step happens (the first acquisition is the constructor, a re-entry
 * {@link ZkHold.reenter}, a release {@link ZkHold.releaseOne}, the client's close {@link ZkHold.closeHold}), as the
 * Redis hold engine's `Hold` does.
 */
export class ZkHold implements Closable, TracedHold {
  /** Acquisitions of this owner here that are not released yet (the constructor is the first). */
  #holds = 1;
  #fingerprint: string | undefined;
  readonly #lost = new AbortController();
  readonly #suspended = new AbortController();
  #isSuspended = false;
  #releasing = false;
  #done = false;
  readonly #detach: () => void;

  constructor(
    /** @internal */
    readonly core: ZkCore,
    /** The primitive's name, for errors. */
    readonly name: string,
    /** What the diagnostics channels call it. */
    readonly kind: PrimitiveKind,
    readonly owner: string,
    readonly entry: Entry,
    /** Called once when the hold ends (released or lost): unregister it. */
    readonly onEnd: (hold: ZkHold) => void,
  ) {
    const session = core.session;
    const gen = entry.generation;
    const onLost = (g: number, reason: SessionLossReason): void => {
      if (g === gen) this.lose(reason);
    };
    const onSuspended = (g: number): void => {
      if (g !== gen || this.#done) return;
      this.#isSuspended = true;
      if (!this.#suspended.signal.aborted) {
        this.#suspended.abort(new ZooKeeperConnectionError(`the ZooKeeper session holding "${name}" is suspended: the lock is uncertain`));
      }
    };
    const onReconnected = (g: number): void => {
      if (g === gen) this.#isSuspended = false;
    };
    session.on('lost', onLost);
    session.on('suspended', onSuspended);
    session.on('reconnected', onReconnected);
    this.#detach = () => {
      session.off('lost', onLost);
      session.off('suspended', onSuspended);
      session.off('reconnected', onReconnected);
    };
    if (session.suspended) onSuspended(gen);
    watchOwn(core, entry.path, gen, () => {
      if (!this.#releasing && !this.#done) this.lose('taken-over');
    });
  }

  get active(): boolean {
    return this.#holds > 0 && !this.#done;
  }
  /** Acquisitions of this owner here not released yet (its hold count in this client). */
  get holdCount(): number {
    return this.#holds;
  }

  /** One more acquisition of this owner (a re-entry): counted, released by one more {@link ZkHold.releaseOne}. */
  reenter(): void {
    this.#holds++;
  }
  /** The fencing token (the node's czxid). */
  get token(): number {
    return this.entry.token;
  }
  /** The owner's fingerprint, for the diagnostics channels: hashed on first use, then kept. */
  get fingerprint(): string {
    return (this.#fingerprint ??= fingerprint(this.owner));
  }
  get signal(): AbortSignal {
    return this.#lost.signal;
  }
  get suspendedSignal(): AbortSignal {
    return this.#suspended.signal;
  }
  get state(): ZkHoldState {
    if (this.#lost.signal.aborted) return 'lost';
    if (this.#done) return 'released';
    return this.#isSuspended ? 'suspended' : 'held';
  }

  /** Marks the hold lost: aborts both signals, reports once. */
  lose(reason: LockLostReason, evenIfEnded = false): void {
    if (this.#lost.signal.aborted || (this.#done && !evenIfEnded)) return;
    if (!this.#done) this.#end();
    const error = new LockLostError(this.name, reason);
    this.#lost.abort(error);
    if (!this.#suspended.signal.aborted) this.#suspended.abort(error);
    publishLost(this.kind, this.name, this, error);
    try {
      this.core.emitLost(error);
    } catch {
      /* a listener's bug must not escape */
    }
  }

  #end(): void {
    this.#done = true;
    this.#detach();
    this.onEnd(this);
  }

  /** Releases one reentrant hold; deletes the node when the last goes. */
  async releaseOne(): Promise<void> {
    if (this.#lost.signal.aborted) {
      const reason = (this.#lost.signal.reason as LockLostError).reason;
      throw new LockNotHeldError(this.name, `"${this.name}" was no longer held when released (lost: ${reason})`);
    }
    this.#holds = Math.max(0, this.#holds - 1);
    if (this.#holds > 0 || this.#done) return;
    await this.#delete();
  }

  async #delete(): Promise<void> {
    this.#releasing = true;
    const session = this.core.session;
    try {
      for (let attempt = 1; ; attempt++) {
        if (session.generation !== this.entry.generation) break; // the session (and our node) is gone already
        try {
          await session.call<void>((c, cb) => c.remove(this.entry.path, -1, cb), undefined, undefined, this.entry.generation);
          break;
        } catch (error) {
          if (session.generation !== this.entry.generation) break;
          const code = zkCode(error);
          if (code === ZK.NO_NODE) {
            // Deleted by someone else before our release: we did not hold it to the end.
            this.lose('taken-over');
            throw new LockNotHeldError(this.name, `"${this.name}" was no longer held when released (its node was deleted)`);
          }
          if (attempt >= 3) throw wrap(error);
          await backoff(ZOOKEEPER_BACKOFF, attempt);
        }
      }
    } finally {
      if (!this.#done) this.#end();
    }
  }

  async closeHold(): Promise<void> {
    if (this.#done) return;
    this.#holds = 0;
    try {
      await this.#delete();
    } finally {
      // Like the Redis client: a hold ended by close() reports itself lost, so code still using it stops.
      this.lose('client-closed', true);
    }
  }
}

/**
 * A held ZooKeeper lock (or permit): one acquisition. Same shape as the Redis `HeldLock`: `release()` once (or
 * `await using`), `token`, `signal`; plus the connection state ZooKeeper adds (`suspendedSignal`, `state`).
 */
export class ZkHeldLock extends Held {
  /** The owner's hold count right after this acquisition (for the diagnostics channels). */
  readonly #holdCount: number;

  /** @internal */
  constructor(
    /** @internal */
    readonly hold: ZkHold,
  ) {
    super();
    this.#holdCount = hold.holdCount;
  }

  /** The primitive's name. */
  get name(): string {
    return this.hold.name;
  }
  /** The owner id this acquisition belongs to (reentrancy groups acquisitions by owner, in this process). */
  get owner(): string {
    return this.hold.owner;
  }
  /** The fencing token: the czxid of our node. A later grant of the same lock always has a larger token. */
  get token(): number {
    return this.hold.entry.token;
  }
  /** The znode that holds the lock. */
  get path(): string {
    return this.hold.entry.path;
  }
  /**
   * Aborts with a `LockLostError` when the lock is lost: the session expired, it went unconfirmed for the session
   * timeout (reason `connection`: from then on the server may have expired it), or the node was deleted.
   */
  get signal(): AbortSignal {
    return this.hold.signal;
  }
  /**
   * Aborts the first time the lock becomes *uncertain*: the session is suspended (disconnected, or a heartbeat
   * unanswered). It does not un-abort on reconnection: check `state`. Pass it to work that must stop as soon as
   * the lock cannot be vouched for (Curator's advice for SUSPENDED).
   */
  get suspendedSignal(): AbortSignal {
    return this.hold.suspendedSignal;
  }
  /** `held`, `suspended` (uncertain: do not act on the resource), `lost` or `released`. */
  get state(): ZkHoldState {
    return this.released && this.hold.state !== 'lost' ? 'released' : this.hold.state;
  }
  /** True once the lock was lost (not when released). */
  get lost(): boolean {
    return this.hold.signal.aborted;
  }
  /**
   * Releases this acquisition (the node is deleted when the owner's last hold is released, which wakes the next
   * waiter). Idempotent: a second call returns the first call's promise.
   * @throws {LockNotHeldError} when the lock was lost before the release
   */
  protected releaseOnce(): Promise<void> {
    return this.hold.releaseOne();
  }

  /** @internal */
  override diagnostics(): HeldFacts {
    const hold = this.hold;
    const permit = hold.kind === 'zk-semaphore';
    return {
      kind: hold.kind,
      name: hold.name,
      fingerprint: hold.fingerprint,
      token: hold.token,
      holdCount: permit ? undefined : this.#holdCount,
      permits: permit ? 1 : undefined,
    };
  }
}

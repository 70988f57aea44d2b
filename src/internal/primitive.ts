/**
 * The template of every owner-held primitive (the lock, the fair lock, the read and the write lock, expirable
 * permits). A primitive is a {@link PrimitiveSpec}: its kind, its scripts (renew, release, inspect an owner), how one
 * acquisition attempts and wraps a grant, and how to tell it is free. The {@link Template} owns everything else, once:
 * option checks, the client's one-time server check (eviction policy), tracing, the first attempt and the wait loop,
 * the undo of an attempt whose reply was lost, `replicaSync`, timeouts, `adopt`, `withLock`, `waitUntilFree`,
 * `onRelease`, release markers and the release rule (the last two through the hold engine, internal/hold.ts).
 *
 * An acquisition goes: check the options and resolve the owner (internal/acquire.ts) → wait for the client's server
 * check → a re-entry waits for a hand-off claim still on its way → the first attempt (unless this process' own
 * waiters queue ahead, see `politeFirst`, or the attempt must be listened for first, see `listenFirst`) → the wait
 * loop (internal/wait.ts) → `WAIT` for replicas, rolling the acquisition back when they are not reached.
 */
import type { Core } from '../core.js';
import type { AcquireContext, PrimitiveKind } from '../diagnostics.js';
import { AcquireTimeoutError, LockNotHeldError, ReplicationNotReachedError } from '../errors.js';
import { heldTitle } from '../kinds.js';
import type { ReleaseMode } from '../lua/codes.js';
import { mayHaveRun } from '../script.js';
import { AcquireParams, type BaseAcquireOptions } from './acquire.js';
import { onRelease, waitUntilFree, waitUntilFreeParams, type EventSource, type ReleaseEvent, type WaitUntilFreeOptions } from './events.js';
import type { Held } from './held.js';
import { HoldTable, type Hold, type HoldOps, type LeasedHeld } from './hold.js';
import { checkReplicaSync, waitReplicas, type ReplicaSync } from './replica-sync.js';
import { runHolding } from './scope.js';
import { traceAcquire } from './trace.js';
import { checkKnownKeys, checkName, checkOptions, optDuration } from './validate.js';
import { checkLease } from './lease.js';
import { refusedWhileMigrating, waitFor, type Attempt } from './wait.js';

export type { ReleaseMode } from '../lua/codes.js';

/** What a primitive tells its template. `H`: its held object. */
export interface PrimitiveSpec<H extends LeasedHeld> {
  /** Which primitive: its held kind in the registry of kinds (src/kinds.ts), which also gives the word its messages use. */
  readonly kind: PrimitiveKind;
  /** The acquire options it accepts (every other key is a `TypeError`). */
  readonly acquireKeys: readonly string[];
  /**
   * Where `withLock` records the owner in the async context, for re-entry (the read and the write lock share one);
   * `undefined` for a primitive without re-entry.
   */
  readonly contextKey: string | undefined;
  /** The channel its waiters sleep on. */
  readonly channel: string;
  /** A key of the acquisition, to route `WAIT` for replicas to its node. */
  readonly syncKey: string;
  /** Registers a waiter under its owner id (per-owner wake-ups on a shared channel, see `Notifier.listen`). */
  readonly tagged?: boolean;
  /** Do not barge past this process' own waiters (see `WaitOptions.politeFirst`; only for a fresh owner). */
  readonly politeFirst?: boolean;
  /** Register on the channel before the first attempt (see `WaitOptions.listenFirst`): no first attempt outside the wait loop. */
  readonly listenFirst?: boolean;
  /** Sets `owner`'s lease to `leaseMs` from now: true if `owner` still holds it. */
  renew(owner: string, leaseMs: number): Promise<boolean>;
  /** One run of the release script: the holds left (0 = released), -1 when `owner` does not hold it, -2 to ask for a marker. */
  release(owner: string, mode: ReleaseMode, marker: string | undefined): Promise<number>;
  /** What `owner` holds in Redis now (for `adopt`): its hold count and token, or `null`. */
  inspectOwner(owner: string): Promise<{ holdCount: number; token: number } | null>;
  /** Wraps a hold in the held object; `holdCount`: the owner's hold count in Redis (a permit's: its permits). */
  wrap(hold: Hold, holdCount: number): H;
  /** Begins one acquisition: its attempt and, where it has them, its hooks. */
  start(acquisition: Acquiring<H>): Acquisition<H>;
  /** How `waitUntilFree` and `onRelease` see it; none for a primitive without them. */
  readonly free?: FreeSpec;
}

/** How a primitive is seen to be free, and where its releases are heard. */
export interface FreeSpec {
  /** Where its releases are heard. */
  readonly source: string | EventSource;
  /** `null` when free, else ms until it may become free without a message (-1: a message only). */
  busyFor(): Promise<number | null>;
  /** Which messages mean "free" (default: every one). */
  freeOn?(message: string): boolean;
  /** How `onRelease` reads a message (default: `a` a force-unlock, any other a release). */
  parse?(message: string): Omit<ReleaseEvent, 'name'> | undefined;
}

/** One acquisition as the template runs it: its checked settings, and how to turn a grant into the held object. */
export interface Acquiring<H extends LeasedHeld> extends AcquireParams {
  /** False for a fixed lease (or none): the watchdog renews only when true. A spec's `start` may change it, with `leaseMs`. */
  watchdog: boolean;
  /**
   * Records a grant confirmed by Redis for an attempt sent at `sentAt` and wraps it (see `PrimitiveSpec.wrap`).
   * `owner`: when the grant is not the acquisition's owner's (a permit's id). `firstLeaseMs`: see `LeaseOptions.firstLeaseMs`.
   */
  grant(token: number, holdCount: number, sentAt: number, owner?: string, firstLeaseMs?: number): H;
  /** One grant for several owners at once (a permit per id): judged once, undone for all when it came too late. */
  grantEach(owners: readonly string[], token: number, holdCount: number, sentAt: number): H[];
  /** The hold engine of this primitive handle (for a hand-off's claim). */
  readonly table: HoldTable;
}

/** What one acquisition of a primitive does. `R`: what it returns (the held object, or several). */
export interface Acquisition<R> {
  /** One attempt; `budgetMs` bounds its Redis command. */
  attempt(budgetMs: number): Promise<Attempt<R>>;
  /** The attempt's reply was lost (it may have run): undo what it may have taken. @default release every hold of a fresh owner */
  undo?(): void;
  /** A wake carried a payload: the prize if it gives it (see `WaitOptions.onPayload`). */
  onPayload?(payload: string): R | undefined;
  /** The wait ended without the prize after waiting (timeout, abort, error): e.g. leave a queue. */
  withdraw?(): Promise<void>;
  /** Called once the acquisition ends, with what it returns (`null`: nothing). */
  done?(result: R | null): void;
}

/**
 * One primitive handle's template: its hold engine (it is the engine's {@link HoldOps}), its acquisitions, `adopt`,
 * `withLock`, `waitUntilFree` and `onRelease`.
 */
export class Template<H extends LeasedHeld> implements HoldOps {
  readonly table: HoldTable;
  /** What the primitive is in words, for messages (the registry's title of its held kind: `fair lock`, `permit`). */
  readonly kind: string;

  constructor(
    readonly core: Core,
    readonly name: string,
    readonly spec: PrimitiveSpec<H>,
  ) {
    this.kind = heldTitle(spec.kind);
    this.table = new HoldTable(this, core);
  }

  // The hold engine's view (HoldOps).
  renew(owner: string, leaseMs: number): Promise<boolean> {
    return this.spec.renew(owner, leaseMs);
  }
  release(owner: string, mode: '0' | '2', marker: string | undefined): Promise<number> {
    return this.spec.release(owner, mode, marker);
  }
  newMarker(): string {
    return this.core.keys.releaseMarker(this.name, this.core.requestId());
  }
  releaseAll(owner: string): Promise<unknown> {
    return this.spec.release(owner, '1', undefined); // every hold at once: nothing remains, so no marker
  }
  inspectOwner(owner: string): Promise<{ holdCount: number; token: number } | null> {
    return this.spec.inspectOwner(owner);
  }

  /**
   * Acquires (traced): the held object, `null` when the time ran out for a `tryAcquire`. `required`: `acquire()`, with
   * no time limit by default, and the time running out is an {@link AcquireTimeoutError}. `start`: the acquisition
   * (the spec's, unless the caller has its own, e.g. several permits at once).
   */
  acquire(options: unknown, required: boolean): Promise<H | null>;
  acquire<R>(options: unknown, required: boolean, start: (acquiring: Acquiring<H>) => Acquisition<R>): Promise<R | null>;
  acquire<R>(options: unknown, required: boolean, start?: (acquiring: Acquiring<H>) => Acquisition<R>): Promise<R | null> {
    return traceAcquire(this.spec.kind, this.name, options, (trace) => this.#acquire(options, required, trace, start));
  }

  async #acquire<R>(options: unknown, required: boolean, trace: AcquireContext | undefined, start: ((a: Acquiring<H>) => Acquisition<R>) | undefined): Promise<R | null> {
    const core = this.core;
    const spec = this.spec;
    const a = new Run<H>(this, options, required);
    const given = (a.options as { replicaSync?: unknown }).replicaSync;
    const sync = given === undefined ? core.settings.replicaSync : checkReplicaSync(given, 'options.replicaSync');
    const acq = start ? start(a) : (spec.start(a) as unknown as Acquisition<R>);
    if (a.ready) await a.ready;
    const { owner, fresh, timeout, signal } = a;
    // A re-entry waits for a hand-off claim still on its way, so that Redis counts the holds in the order made here.
    const claim = fresh ? undefined : this.table.claimOf(owner);
    if (claim) await claim;
    let result: R | null = null;
    try {
      // The common case first, without the waiting machinery: one attempt, unless this process' own waiters queue
      // ahead of a fresh owner (see `politeFirst`), or the attempt must be listened for first.
      let first: Attempt<R> | undefined;
      const notifier = core.notifier;
      const channel = spec.channel;
      if (!spec.listenFirst && !(spec.politeFirst && fresh && timeout !== 0 && notifier.busyFor(channel) > 0 && notifier.waiting(channel) > 0)) {
        signal?.throwIfAborted();
        if (trace) trace.attempts++;
        first = await acq.attempt(core.settings.commandTimeout).catch((error: unknown) => {
          this.#undo(error, a, acq);
          return refusedWhileMigrating<R>(error, timeout);
        });
      }
      result = first?.done
        ? first.value
        : first && timeout === 0
          ? null
          : await waitFor(core, {
              name: this.name,
              channel,
              tag: spec.tagged ? owner : undefined,
              politeFirst: spec.politeFirst === true && fresh,
              listenFirst: spec.listenFirst,
              timeout,
              signal,
              attempt: (budget) =>
                acq.attempt(budget).catch((error: unknown) => {
                  this.#undo(error, a, acq);
                  throw error;
                }),
              first,
              trace,
              onPayload: acq.onPayload?.bind(acq),
              onGiveUp: acq.withdraw?.bind(acq),
            });
    } finally {
      acq.done?.(result);
    }
    if (result !== null && sync) await this.#syncReplicas(result, sync);
    if (result === null && required) throw new AcquireTimeoutError(this.name, timeout ?? 0);
    return result;
  }

  /** An attempt failed: when its reply was lost, the prize may be ours in Redis; undo it (its lease bounds it anyway). */
  #undo(error: unknown, a: Acquiring<H>, acq: Acquisition<unknown>): void {
    if (!mayHaveRun(error)) return;
    if (acq.undo) acq.undo();
    else if (a.fresh) {
      this.releaseAll(a.owner).catch(() => {
        /* Redis is unreachable: the lease will expire */
      });
    }
  }

  /** WAIT for replicas; when not reached (or WAIT fails), roll the acquisition back and throw. */
  async #syncReplicas(result: unknown, sync: ReplicaSync): Promise<void> {
    const rollBack = (): Promise<unknown> =>
      Promise.allSettled((Array.isArray(result) ? (result as Held[]) : [result as Held]).map((held) => held.release())); // the lease bounds a hold not released
    let reached: number;
    try {
      reached = await waitReplicas(this.core, this.spec.syncKey, sync);
    } catch (error) {
      await rollBack();
      throw error;
    }
    if (reached < sync.replicas) {
      await rollBack();
      throw new ReplicationNotReachedError(this.name, sync.replicas, reached);
    }
  }

  /**
   * Takes over the hold of `ownerId` in Redis (see `Lock.adopt`). `what`: the argument's name, for errors.
   * @throws {LockNotHeldError} when it holds nothing
   */
  async adopt(ownerId: unknown, options: unknown, what = 'ownerId'): Promise<H> {
    const owner = checkName(ownerId, what);
    const opts = checkOptions<{ lease?: number }>(options);
    checkKnownKeys(opts, ADOPT_KEYS);
    const given = optDuration(opts.lease, 'options.lease');
    const lease = given === undefined ? undefined : checkLease(given, 'options.lease');
    this.core.assertOpen();
    const adopted = await this.table.adopt(owner, lease ?? this.core.settings.watchdogLease, lease === undefined);
    if (!adopted) throw new LockNotHeldError(this.name, `${this.kind} "${this.name}" is not held by the owner to adopt`);
    return this.spec.wrap(adopted.hold, adopted.holdCount);
  }

  /**
   * Runs `fn` holding the primitive, with `scope(held)`, and releases it afterwards, also when `fn` throws; inside `fn`
   * (its async call chain) the hold is recorded under the spec's context key, for re-entry.
   */
  async withLock<S, T>(fn: (scope: S) => Promise<T> | T, acquire: () => Promise<H>, scope: (held: H) => S): Promise<T> {
    if (typeof fn !== 'function') throw new TypeError(`fn must be a function, got ${typeof fn}`);
    const held = await acquire();
    const hold = held.hold;
    const key = this.spec.contextKey;
    if (key === undefined) {
      await using scoped = held;
      return await fn(scope(scoped));
    }
    return runHolding(this.core, key, held, () => hold.active, () => fn(scope(held)));
  }

  /** Waits until the primitive is free, without taking it (see `Lock.waitUntilFree`). */
  async waitUntilFree(options: unknown): Promise<boolean> {
    const { timeout, signal } = waitUntilFreeParams(options);
    this.core.assertOpen();
    const free = this.#free();
    return waitUntilFree(this.core, free.source, () => free.busyFor(), timeout, signal, free.freeOn?.bind(free));
  }

  /** Calls `listener` for each release and force-unlock, by any process (see `Lock.onRelease`). */
  async onRelease(listener: (event: ReleaseEvent) => void): Promise<() => void> {
    const free = this.#free();
    return onRelease(this.core, this.name, free.source, listener, free.parse?.bind(free));
  }

  #free(): FreeSpec {
    const free = this.spec.free;
    if (!free) throw new TypeError(`a ${this.kind} has no release events`);
    return free;
  }
}

const ADOPT_KEYS = ['lease'] as const;

/** One acquisition's settings ({@link Acquiring}): one object per acquisition, its `grant` a method, not a closure. */
class Run<H extends LeasedHeld> extends AcquireParams implements Acquiring<H> {
  watchdog: boolean;
  readonly #template: Template<H>;

  constructor(template: Template<H>, options: unknown, required: boolean) {
    const spec = template.spec;
    super(template.core, options, spec.acquireKeys, required, spec.contextKey);
    this.watchdog = this.fixedLease === undefined;
    this.#template = template;
  }

  get table(): HoldTable {
    return this.#template.table;
  }

  grant(token: number, holdCount: number, sentAt: number, owner = this.owner, firstLeaseMs?: number): H {
    const template = this.#template;
    return template.spec.wrap(template.table.held(owner, token, sentAt, this.leaseMs, this.watchdog, firstLeaseMs), holdCount);
  }

  grantEach(owners: readonly string[], token: number, holdCount: number, sentAt: number): H[] {
    const template = this.#template;
    return template.table.heldEach(owners, token, sentAt, this.leaseMs, this.watchdog).map((hold) => template.spec.wrap(hold, holdCount));
  }
}

/** Options of `adopt(ownerId, options)` on a lock, a read or write lock, or a permit. */
export interface AdoptOptions {
  /**
   * A fixed lease in ms, set at once: the hold expires then unless released or extended, and no watchdog renews it.
   * @default undefined: the watchdog of this client takes over, keeping a `watchdogLease` lease renewed every `watchdogInterval`
   */
  lease?: number;
}

/**
 * What the lock, the fair lock and the two sides of a read-write lock share: `acquire`, `tryAcquire`, `withLock`,
 * `adopt` and `waitUntilFree`, all written once in their {@link Template}. The object is a cheap handle: ownership is
 * per acquisition (or per async call chain, see {@link OwnedLock.withLock}), never per handle.
 */
export abstract class OwnedLock<H extends LeasedHeld, S, O = BaseAcquireOptions> {
  /** @internal */
  readonly template: Template<H>;
  readonly #scope: (held: H) => S;

  /** @internal */
  constructor(
    /** @internal */
    readonly core: Core,
    /** The lock's name. */
    readonly name: string,
    spec: PrimitiveSpec<H>,
    scope: (held: H) => S,
  ) {
    this.template = new Template(core, name, spec);
    this.#scope = scope;
  }

  /**
   * Waits for the lock and returns the held lock. Reentrant when called inside `withLock` for the same name (same
   * async call chain) or with the same explicit `owner`.
   * @throws {AcquireTimeoutError} when `timeout` passes first (never before: the last attempt is made at the deadline)
   * @throws {ReplicationNotReachedError} when `replicaSync` is asked for and not reached (the acquisition was rolled back)
   * @throws {RedisConnectionError} when Redis does not answer within `commandTimeout`
   * @throws the signal's reason when `signal` aborts
   */
  acquire(options?: O): Promise<H> {
    return this.template.acquire(options, true) as Promise<H>;
  }

  /**
   * One attempt, or a wait of at most `timeout` ms: the held lock, or `null` when it is still taken when the time is
   * up.
   */
  tryAcquire(options?: O): Promise<H | null> {
    return this.template.acquire(options, false);
  }

  /**
   * Runs `fn` while holding the lock and releases it afterwards, also when `fn` throws. Inside `fn` (its whole async
   * call chain) the lock is reentrant: nested `acquire()`/`withLock()` on the same name raise the hold count.
   */
  withLock<T>(fn: (scope: S) => Promise<T> | T, options?: O): Promise<T> {
    return this.template.withLock(fn, () => this.acquire(options), this.#scope);
  }

  /**
   * Takes over the hold of owner `ownerId` (acquired with an explicit `owner`, by another process or by a client
   * that is gone): same hold in Redis, same fencing token, no second hold count. The lease is set at once (the
   * watchdog of this client, or `options.lease`), so renewal is taken over here; the adopter may `release()` it (one
   * hold count, as any acquisition: for a lock taken once, that frees it). A holder that still renews keeps renewing
   * the same key: stop it, or let it be gone. In a client that holds it already, this joins that hold (as a re-entry
   * that adds no hold count), whose lease goes on as it was.
   * @throws {LockNotHeldError} when `ownerId` does not hold the lock
   */
  adopt(ownerId: string, options?: AdoptOptions): Promise<H> {
    return this.template.adopt(ownerId, options);
  }

  /**
   * Waits until the lock is free, without taking it. Resolves `true` once it is free or a release of it is heard (it
   * was free at that moment; someone may have taken it again since), `false` when `timeout` passes first. Woken by
   * releases over pub/sub; an expiry publishes nothing, so the wait sleeps at most the holder's remaining lease before
   * looking again.
   * @throws the signal's reason when `signal` aborts
   */
  waitUntilFree(options?: WaitUntilFreeOptions): Promise<boolean> {
    return this.template.waitUntilFree(options);
  }
}

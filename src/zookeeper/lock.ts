/**
 * The reentrant lock over ZooKeeper: the recipe of ZooKeeper's docs and Curator's `InterProcessMutex`.
 * Each acquirer creates `_c_<guid>-lock-<seq>` (ephemeral, sequential); the lowest sequence holds; every other
 * waiter watches only the node just before its own (no herd), and re-reads the queue when that node goes.
 *
 * @module
 */
import type { AcquireContext, PrimitiveKind } from '../diagnostics.js';
import { AcquireTimeoutError } from '../errors.js';
import { waitUntilFreeParams, type ReleaseEvent, type WaitUntilFreeOptions } from '../internal/events.js';
import { ownerFingerprint } from '../internal/fingerprint.js';
import { traceAcquire } from '../internal/trace.js';
import { checkKnownKeys, checkName, checkOptions, optDuration, optSignal } from '../internal/validate.js';
import { zkOnRelease, zkWaitUntilFree } from './events.js';
import { ZkHeldLock, ZkHold } from './hold.js';
import { enqueue, readQueue, wrap, type Verdict, type ZkCore } from './queue.js';
import { ZK, zkCode } from './session.js';

/** Options of the ZooKeeper `acquire()` / `tryAcquire()`. */
export interface ZkAcquireOptions {
  /**
   * How long to wait, in ms. `0` makes a single attempt.
   * @default no limit for `acquire()`; `0` for `tryAcquire()`
   */
  timeout?: number;
  /** Aborts the wait: the promise rejects with `signal.reason` (our queue node is deleted). */
  signal?: AbortSignal;
  /**
   * An explicit owner id: acquisitions with the same id in this process are the same owner (reentrant). A ZooKeeper
   * lock belongs to this process's session, so an owner id cannot hand a lock to another process.
   * @default a fresh id per acquisition, or the id this async call chain holds the lock under (inside `withLock`)
   */
  owner?: string;
}

const ACQUIRE_KEYS = ['timeout', 'signal', 'owner'] as const;

/** What `withLock` hands the callback. */
export interface ZkLockScope {
  /** Aborts with a `LockLostError` if the lock is lost while `fn` runs. */
  signal: AbortSignal;
  /** The fencing token (czxid) of this hold. */
  token: number;
  /** The held lock. */
  lock: ZkHeldLock;
}

/** Parsed acquire options. */
export interface ParsedAcquire {
  timeout: number | undefined;
  signal: AbortSignal | undefined;
  owner: string | undefined;
}

/** Validates acquire options (before any ZooKeeper call). */
export function parseAcquire(options: unknown, defaultTimeout: number | undefined): ParsedAcquire {
  const opts = checkOptions<ZkAcquireOptions>(options);
  checkKnownKeys(opts, ACQUIRE_KEYS);
  const timeout = optDuration(opts.timeout, 'options.timeout', 0) ?? defaultTimeout;
  const signal = optSignal(opts.signal, 'options.signal');
  if (opts.owner !== undefined) checkName(opts.owner, 'options.owner');
  return { timeout, signal, owner: opts.owner };
}

/** How one primitive queues: its registry key, directory, node kind, grant rule, and its kind on the channels. */
export interface QueueSpec {
  key: string;
  name: string;
  dir: string;
  kind: string;
  primitive: PrimitiveKind;
  verdict: (sorted: string[], index: number) => Verdict;
}

/** The owner an acquisition runs under: explicit, inherited from `withLock`'s call chain, or fresh. */
export function ownerFor(core: ZkCore, key: string, explicit: string | undefined): string {
  if (explicit !== undefined) return explicit;
  const inherited = core.context.getStore()?.get(key);
  return inherited && inherited.active() ? inherited.owner : core.newOwner();
}

/** The live hold of `owner` on `key`, if any. */
export function liveHold(core: ZkCore, key: string, owner: string): ZkHold | undefined {
  const hold = core.registry.get(key)?.get(owner);
  return hold instanceof ZkHold && hold.active ? hold : undefined;
}

/**
 * Acquires `spec` for `owner`: a reentrant hold if the owner holds it already, else queues. `null` on timeout.
 */
export async function acquireHold(
  core: ZkCore,
  spec: QueueSpec,
  owner: string,
  parsed: ParsedAcquire,
  trace: AcquireContext | undefined,
  bypass = false,
): Promise<ZkHeldLock | null> {
  core.assertOpen();
  const existing = liveHold(core, spec.key, owner);
  if (existing) {
    existing.reenter();
    return new ZkHeldLock(existing);
  }
  // the node carries its owner's fingerprint, so that inspections can tell holders apart without the owner id
  const data = Buffer.from(ownerFingerprint(owner));
  const entry = await enqueue(core, { dir: spec.dir, kind: spec.kind, timeout: parsed.timeout, signal: parsed.signal, bypass, verdict: spec.verdict, data, trace });
  if (!entry) return null;
  // Another acquisition of the same owner may have finished while we waited: keep one node per owner.
  const raced = liveHold(core, spec.key, owner);
  if (raced) {
    raced.reenter();
    void core.session.call<void>((c, cb) => c.remove(entry.path, -1, cb)).catch(() => {});
    return new ZkHeldLock(raced);
  }
  const hold = new ZkHold(core, spec.name, spec.primitive, owner, entry, (h) => {
    const owners = core.registry.get(spec.key);
    if (owners?.get(h.owner) === h) owners.delete(h.owner);
    if (owners?.size === 0) core.registry.delete(spec.key);
    core.holds.delete(h);
  });
  let owners = core.registry.get(spec.key);
  if (!owners) core.registry.set(spec.key, (owners = new Map()));
  owners.set(owner, hold);
  core.holds.add(hold);
  return new ZkHeldLock(hold);
}

/**
 * Deletes the nodes `holders` picks from the queue of `dir` (the holders' nodes, whoever holds them): their holders'
 * `signal`s abort (each watches its own node), and the next waiters are granted as if the holders had released.
 * Returns true when a node was deleted.
 */
export async function deleteHolders(core: ZkCore, dir: string, holders: (sorted: string[]) => string[]): Promise<boolean> {
  const nodes = holders(await readQueue(core, dir));
  const deleted = await Promise.all(
    nodes.map(async (node) => {
      try {
        await core.session.call<void>((c, cb) => c.remove(`${dir}/${node}`, -1, cb));
        return true;
      } catch (error) {
        if (zkCode(error) === ZK.NO_NODE) return false; // released meanwhile
        throw wrap(error);
      }
    }),
  );
  return deleted.includes(true);
}

/** Runs `fn` under a held lock, with the lock reentrant for `fn`'s whole async call chain; releases after. */
export async function runWith<T, S>(core: ZkCore, key: string, held: ZkHeldLock, scope: S, fn: (scope: S) => Promise<T> | T): Promise<T> {
  try {
    const hold = held.hold;
    const context = new Map(core.context.getStore() ?? []);
    context.set(key, { owner: held.owner, active: () => hold.active });
    return await core.context.run(context, () => fn(scope));
  } finally {
    await held[Symbol.asyncDispose]();
  }
}

/**
 * A reentrant lock on ZooKeeper, from `zk.lock(name)`. A cheap handle: ownership is per acquisition (or per async
 * call chain inside {@link ZkLock.withLock}), never per handle.
 */
export class ZkLock {
  readonly #spec: QueueSpec;

  /** @internal */
  constructor(
    /** @internal */
    readonly core: ZkCore,
    /** The lock's name. */
    readonly name: string,
  ) {
    this.#spec = {
      key: `lock:${name}`,
      name,
      dir: core.dir('lock', name),
      kind: 'lock',
      primitive: 'zk-lock',
      verdict: (sorted, index) => (index === 0 ? { granted: true } : { granted: false, watch: sorted[index - 1]! }),
    };
  }

  /**
   * Waits for the lock. Reentrant inside {@link ZkLock.withLock} (same async call chain) or with the same `owner`.
   * @throws {AcquireTimeoutError} when `timeout` passes first
   * @throws {ZooKeeperConnectionError} when ZooKeeper cannot be reached, or the session is lost while waiting
   * @throws the signal's reason when `signal` aborts
   */
  acquire(options?: ZkAcquireOptions): Promise<ZkHeldLock> {
    return traceAcquire('zk-lock', this.name, options, async (trace) => {
      const parsed = parseAcquire(options, undefined);
      const held = await acquireHold(this.core, this.#spec, ownerFor(this.core, this.#spec.key, parsed.owner), parsed, trace);
      if (!held) throw new AcquireTimeoutError(this.name, parsed.timeout ?? 0);
      return held;
    });
  }

  /** One attempt (or a wait of at most `timeout` ms): the held lock, or `null` when another owner holds it. */
  tryAcquire(options?: ZkAcquireOptions): Promise<ZkHeldLock | null> {
    return traceAcquire('zk-lock', this.name, options, async (trace) => {
      const parsed = parseAcquire(options, 0);
      return acquireHold(this.core, this.#spec, ownerFor(this.core, this.#spec.key, parsed.owner), parsed, trace);
    });
  }

  /** Runs `fn` holding the lock, releases afterwards (also when `fn` throws). Reentrant inside `fn`. */
  async withLock<T>(fn: (scope: ZkLockScope) => Promise<T> | T, options?: ZkAcquireOptions): Promise<T> {
    if (typeof fn !== 'function') throw new TypeError(`fn must be a function, got ${typeof fn}`);
    const held = await this.acquire(options);
    return runWith(this.core, this.#spec.key, held, { signal: held.signal, token: held.token, lock: held }, fn);
  }

  /** True when any owner (in any process) holds the lock. */
  async isLocked(): Promise<boolean> {
    return (await this.queue()).length > 0;
  }

  /** The queue: holder first, then the waiters (node names). */
  queue(): Promise<string[]> {
    return readQueue(this.core, this.#spec.dir);
  }

  /**
   * Deletes the holder's node, whoever holds the lock: its `signal` aborts (`taken-over`), the first waiter gets it.
   * For operators.
   * @returns true if a node was deleted
   */
  forceUnlock(): Promise<boolean> {
    this.core.assertOpen();
    return deleteHolders(this.core, this.#spec.dir, (sorted) => sorted.slice(0, 1));
  }

  /**
   * Waits, without taking the lock or queueing, until nobody holds it or the holder it saw is gone (the lock may have
   * gone to the next waiter) → `true`; `false` when `timeout` passes first. Woken by a watch.
   * @throws the signal's reason when `signal` aborts
   */
  async waitUntilFree(options?: WaitUntilFreeOptions): Promise<boolean> {
    const { timeout, signal } = waitUntilFreeParams(options);
    this.core.assertOpen();
    return zkWaitUntilFree(this.core, { dir: this.#spec.dir, busy: (sorted) => sorted.slice(0, 1), handOff: true }, timeout, signal);
  }

  /**
   * Calls `listener` each time a hold ends, in any process (a release, a forced unlock or an ended session: all
   * `release`), until the returned function is called.
   */
  onRelease(listener: (event: ReleaseEvent) => void): Promise<() => void> {
    return zkOnRelease(this.core, this.name, this.#spec.dir, (sorted) => sorted.slice(0, 1), undefined, listener);
  }
}

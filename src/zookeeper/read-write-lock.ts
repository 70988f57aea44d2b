/**
 * The read-write lock over ZooKeeper (the "shared locks" recipe, Curator's `InterProcessReadWriteLock`): one queue
 * of `read-` and `write-` nodes. A reader holds when no writer is ahead of it and watches the nearest writer ahead;
 * a writer holds when it is first and watches the node just before it. FIFO order: writers are not starved.
 * The write lock's owner may take the read lock (a downgrade); a reader asking for the write lock is refused.
 *
 * A downgrade's read node is granted at once, wherever it lands in the queue (a writer may be waiting ahead of it),
 * so it is named for what it is: `downgrade.<sequence of its write node>`. A writer is granted only when it is first
 * and no other write node's downgrade is left in the queue: else a writer waiting when the write lock was
 * downgraded would be granted as soon as that write lock is released, beside the downgraded reader.
 *
 * @module
 */
import type { Stat } from 'node-zookeeper-client';
import type { AcquireContext } from '../diagnostics.js';
import { AcquireTimeoutError, UpgradeRefusedError } from '../errors.js';
import { waitUntilFreeParams, type ReleaseEvent, type WaitUntilFreeOptions } from '../internal/events.js';
import { traceAcquire } from '../internal/trace.js';
import { checkKnownKeys, checkName, checkOptions } from '../internal/validate.js';
import { zkOnRelease, zkWaitUntilFree } from './events.js';
import { ZkHold, type ZkHeldLock } from './hold.js';
import { kindOf, readQueue, sequenceOf, wrap, type Verdict, type ZkCore } from './queue.js';
import { ZK, zkCode } from './session.js';
import {
  acquireHold,
  deleteHolders,
  liveHold,
  parseAcquire,
  runWith,
  type ParsedAcquire,
  type QueueSpec,
  type ZkAcquireOptions,
  type ZkLockScope,
} from './lock.js';

/** Options of `isHeld` and `holdCount` on a side of a ZooKeeper read-write lock. */
export interface ZkHeldByOptions {
  /**
   * The owner id to ask about, in this client.
   * @default the owner this async call chain holds the lock under, if any
   */
  owner?: string;
}

const HELD_BY_KEYS = ['owner'] as const;

/** One reader of a ZooKeeper read-write lock, as `ZkReadLock.readers()` reports it. */
export interface ZkReaderInfo {
  /** `ownerFingerprint(ownerId)` of the reader ('' for a node made without one). */
  fingerprint: string;
  /** The reader's hold count when it holds in this client; `null` for another client's reader. */
  holdCount: number | null;
  /** The session its node belongs to (hex): no lease, the reader holds while this session lives. */
  session: string;
  /** The reader's znode name. */
  node: string;
}

const DOWNGRADE = 'downgrade.';

/** True for a downgrade's read node (see the module's notes). */
function isDowngrade(node: string): boolean {
  return kindOf(node).startsWith(DOWNGRADE);
}

/** The sequence of the write node a downgrade node was taken under. */
function downgradeOf(node: string): number {
  return Number(kindOf(node).slice(DOWNGRADE.length));
}

/** A reader is granted when no write node is ahead of it; a downgrade's read node always is. */
function readVerdict(sorted: string[], index: number): Verdict {
  for (let i = index - 1; i >= 0; i--) if (kindOf(sorted[i]!) === 'write') return { granted: false, watch: sorted[i]! };
  return { granted: true };
}

/** A writer is granted when it is first and no other write node's downgraded reader is left. */
function writeVerdict(sorted: string[], index: number): Verdict {
  const self = sequenceOf(sorted[index]!);
  const downgraded = sorted.find((node) => isDowngrade(node) && downgradeOf(node) !== self);
  if (downgraded !== undefined) return { granted: false, watch: downgraded };
  return index === 0 ? { granted: true } : { granted: false, watch: sorted[index - 1]! };
}

/** The nodes of the queue that hold the lock now: the readers (downgrades included) and the writer. */
function holdersOf(sorted: string[]): string[] {
  return sorted.filter((node, i) => isDowngrade(node) || (kindOf(node) === 'write' ? writeVerdict(sorted, i) : readVerdict(sorted, i)).granted);
}

/** One side (read or write) of a {@link ZkReadWriteLock}. */
export class ZkRwSide {
  /** @internal */
  constructor(
    /** @internal */
    readonly core: ZkCore,
    /** @internal */
    readonly spec: QueueSpec,
    /** @internal */
    readonly other: QueueSpec,
    /** Which side of the read-write lock this is. */
    readonly mode: 'read' | 'write',
  ) {}

  /** The lock's name. */
  get name(): string {
    return this.spec.name;
  }

  /** The owner this async call chain holds either side of the lock under, if any. */
  #inherited(): string | undefined {
    const store = this.core.context.getStore();
    for (const key of [this.spec.key, this.other.key]) {
      const inherited = store?.get(key);
      if (inherited && inherited.active()) return inherited.owner;
    }
    return undefined;
  }

  async #acquire(parsed: ParsedAcquire, trace: AcquireContext | undefined): Promise<ZkHeldLock | null> {
    const owner = parsed.owner ?? this.#inherited() ?? this.core.newOwner();
    const other = liveHold(this.core, this.other.key, owner);
    if (this.mode === 'write' && other && !liveHold(this.core, this.spec.key, owner)) throw new UpgradeRefusedError(this.name);
    // A read lock taken by the write lock's owner is granted at once (downgrade): the writer excludes everyone else.
    // Its node says so, and names the write node, so that no other writer is granted while it lives.
    if (this.mode === 'read' && other) {
      const spec = { ...this.spec, kind: `${DOWNGRADE}${sequenceOf(other.entry.path)}` };
      return acquireHold(this.core, spec, owner, parsed, trace, true);
    }
    return acquireHold(this.core, this.spec, owner, parsed, trace);
  }

  /** The hold count of an owner on this side in this client (0 when none), its node checked in ZooKeeper. */
  async holdCount(options?: ZkHeldByOptions): Promise<number> {
    const opts = checkOptions<ZkHeldByOptions>(options);
    checkKnownKeys(opts, HELD_BY_KEYS);
    const owner = opts.owner === undefined ? this.#inherited() : checkName(opts.owner, 'options.owner');
    this.core.assertOpen();
    const hold = owner === undefined ? undefined : liveHold(this.core, this.spec.key, owner);
    if (!hold) return 0;
    let stat: Stat | null;
    try {
      stat = await this.core.session.call<Stat | null>((c, cb) => c.exists(hold.entry.path, cb), undefined, undefined, hold.entry.generation);
    } catch (error) {
      // the session that made the node is gone, and the node with it
      if (this.core.session.generation !== hold.entry.generation) return 0;
      throw wrap(error);
    }
    return stat && hold.active ? hold.holdCount : 0;
  }

  /** True when an owner holds this side in this client (see {@link ZkRwSide.holdCount}). */
  async isHeld(options?: ZkHeldByOptions): Promise<boolean> {
    return (await this.holdCount(options)) > 0;
  }

  /**
   * Waits without taking or queueing: on the write side as {@link ZkReadWriteLock.waitUntilFree}; on the read side
   * until a new reader would be let in at once (no write node queued) → `true`; `false` at the timeout.
   * @throws the signal's reason when `signal` aborts
   */
  async waitUntilFree(options?: WaitUntilFreeOptions): Promise<boolean> {
    const { timeout, signal } = waitUntilFreeParams(options);
    this.core.assertOpen();
    const view =
      this.mode === 'read'
        ? { dir: this.spec.dir, busy: (sorted: string[]) => sorted.filter((node) => kindOf(node) === 'write'), handOff: false }
        : { dir: this.spec.dir, busy: holdersOf, handOff: true };
    return zkWaitUntilFree(this.core, view, timeout, signal);
  }

  /**
   * Waits for this side of the lock.
   * @throws {AcquireTimeoutError} when `timeout` passes first
   * @throws {UpgradeRefusedError} when a read-lock owner asks for the write lock
   */
  acquire(options?: ZkAcquireOptions): Promise<ZkHeldLock> {
    return traceAcquire(this.spec.primitive, this.name, options, async (trace) => {
      const parsed = parseAcquire(options, undefined);
      const held = await this.#acquire(parsed, trace);
      if (!held) throw new AcquireTimeoutError(this.name, parsed.timeout ?? 0);
      return held;
    });
  }

  /** One attempt (or a wait of at most `timeout` ms): the held lock or `null`. */
  tryAcquire(options?: ZkAcquireOptions): Promise<ZkHeldLock | null> {
    return traceAcquire(this.spec.primitive, this.name, options, async (trace) => this.#acquire(parseAcquire(options, 0), trace));
  }

  /** Runs `fn` holding this side; reentrant (and downgradable) inside `fn`. */
  async withLock<T>(fn: (scope: ZkLockScope) => Promise<T> | T, options?: ZkAcquireOptions): Promise<T> {
    if (typeof fn !== 'function') throw new TypeError(`fn must be a function, got ${typeof fn}`);
    const held = await this.acquire(options);
    return runWith(this.core, this.spec.key, held, { signal: held.signal, token: held.token, lock: held }, fn);
  }
}

/** The read side of a {@link ZkReadWriteLock}: the methods of {@link ZkRwSide}, and who holds it. */
export class ZkReadLock extends ZkRwSide {
  /** Who holds the read lock now, in queue order, by owner fingerprint (never the owner id). */
  async readers(): Promise<ZkReaderInfo[]> {
    const core = this.core;
    const dir = this.spec.dir;
    const nodes = holdersOf(await readQueue(core, dir)).filter((node) => kindOf(node) !== 'write');
    // this client's readers, by node path: their hold counts
    const local = new Map<string, number>();
    for (const hold of core.registry.get(this.spec.key)?.values() ?? []) {
      if (hold instanceof ZkHold && hold.active) local.set(hold.entry.path, hold.holdCount);
    }
    const read = await Promise.all(
      nodes.map(async (node): Promise<ZkReaderInfo | undefined> => {
        const path = `${dir}/${node}`;
        let data: Buffer | undefined;
        let stat: Stat;
        try {
          [data, stat] = await core.session.call<[Buffer | undefined, Stat]>((c, cb) => c.getData(path, (error, d, s) => cb(error, [d, s])));
        } catch (error) {
          if (zkCode(error) === ZK.NO_NODE) return undefined; // released meanwhile
          throw wrap(error);
        }
        return { fingerprint: data?.toString() ?? '', holdCount: local.get(path) ?? null, session: stat.ephemeralOwner.toString('hex'), node };
      }),
    );
    return read.filter((r): r is ZkReaderInfo => r !== undefined);
  }
}

/** A read-write lock on ZooKeeper, from `zk.readWriteLock(name)`: `readLock()` and `writeLock()`. */
export class ZkReadWriteLock {
  readonly #read: ZkReadLock;
  readonly #write: ZkRwSide;

  /** @internal */
  constructor(
    /** @internal */
    readonly core: ZkCore,
    /** The lock's name. */
    readonly name: string,
  ) {
    const dir = core.dir('rwlock', name);
    const read: QueueSpec = {
      key: `rw:${name}:read`,
      name,
      dir,
      kind: 'read',
      primitive: 'zk-read-lock',
      verdict: readVerdict,
    };
    const write: QueueSpec = {
      key: `rw:${name}:write`,
      name,
      dir,
      kind: 'write',
      primitive: 'zk-write-lock',
      verdict: writeVerdict,
    };
    this.#read = new ZkReadLock(core, read, write, 'read');
    this.#write = new ZkRwSide(core, write, read, 'write');
  }

  /** The shared side: many readers at once, none while a writer holds. */
  readLock(): ZkReadLock {
    return this.#read;
  }
  /** The exclusive side. */
  writeLock(): ZkRwSide {
    return this.#write;
  }

  /**
   * The queue of read and write nodes in sequence order (holders first, except a downgraded reader, which holds
   * wherever it is); `kind` is `read` or `write`.
   */
  async queue(): Promise<
    {
      /** The znode's name. */
      node: string;
      /** `read` or `write`. */
      kind: string;
    }[]
  > {
    return (await readQueue(this.core, this.#read.spec.dir)).map((node) => ({ node, kind: isDowngrade(node) ? 'read' : kindOf(node) }));
  }

  /**
   * Deletes the writer's and every reader's node: their `signal`s abort (`taken-over`); waiters keep their places.
   * For operators.
   * @returns true when a node was deleted
   */
  forceUnlock(): Promise<boolean> {
    this.core.assertOpen();
    return deleteHolders(this.core, this.#read.spec.dir, holdersOf);
  }

  /**
   * Waits, without taking or queueing, until neither a writer nor any reader holds it, or every hold it saw is gone
   * (the lock may have gone to waiters) → `true`; `false` when `timeout` passes first. Woken by a watch.
   * @throws the signal's reason when `signal` aborts
   */
  async waitUntilFree(options?: WaitUntilFreeOptions): Promise<boolean> {
    return this.#write.waitUntilFree(options);
  }

  /** Calls `listener` each time a hold of either side ends (with `side`), as `ZkLock.onRelease`. */
  onRelease(listener: (event: ReleaseEvent) => void): Promise<() => void> {
    return zkOnRelease(this.core, this.name, this.#read.spec.dir, holdersOf, (node) => (kindOf(node) === 'write' ? 'write' : 'read'), listener);
  }
}

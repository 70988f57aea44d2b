/**
 * The read-write lock over ZooKeeper (the "shared locks" recipe, Curator's `InterProcessReadWriteLock`): one queue
 * of `read-` and `write-` nodes. A reader holds when no writer is ahead of it and watches the nearest writer ahead;
 * a writer holds when it is first and watches the node just before it. FIFO order: writers are not starved.
 * The write lock's owner may take the read lock (a downgrade); a reader asking for the write lock is refused.
 *
 * @module
 */
import type { AcquireContext } from '../diagnostics.js';
import { AcquireTimeoutError, UpgradeRefusedError } from '../errors.js';
import { traceAcquire } from '../internal/trace.js';
import type { ZkHeldLock } from './hold.js';
import { kindOf, readQueue, type ZkCore } from './queue.js';
import { acquireHold, liveHold, parseAcquire, runWith, type ParsedAcquire, type QueueSpec, type ZkAcquireOptions, type ZkLockScope } from './lock.js';

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

  #owner(explicit: string | undefined): string {
    if (explicit !== undefined) return explicit;
    const store = this.core.context.getStore();
    for (const key of [this.spec.key, this.other.key]) {
      const inherited = store?.get(key);
      if (inherited && inherited.active()) return inherited.owner;
    }
    return this.core.newOwner();
  }

  async #acquire(parsed: ParsedAcquire, trace: AcquireContext | undefined): Promise<ZkHeldLock | null> {
    const owner = this.#owner(parsed.owner);
    const holdsOther = liveHold(this.core, this.other.key, owner) !== undefined;
    if (this.mode === 'write' && holdsOther && !liveHold(this.core, this.spec.key, owner)) throw new UpgradeRefusedError(this.name);
    // A read lock taken by the write lock's owner is granted at once (downgrade): the writer excludes everyone else.
    return acquireHold(this.core, this.spec, owner, parsed, trace, this.mode === 'read' && holdsOther);
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

/** A read-write lock on ZooKeeper, from `zk.readWriteLock(name)`: `readLock()` and `writeLock()`. */
export class ZkReadWriteLock {
  readonly #read: ZkRwSide;
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
      verdict: (sorted, index) => {
        for (let i = index - 1; i >= 0; i--) if (kindOf(sorted[i]!) === 'write') return { granted: false, watch: sorted[i]! };
        return { granted: true };
      },
    };
    const write: QueueSpec = {
      key: `rw:${name}:write`,
      name,
      dir,
      kind: 'write',
      primitive: 'zk-write-lock',
      verdict: (sorted, index) => (index === 0 ? { granted: true } : { granted: false, watch: sorted[index - 1]! }),
    };
    this.#read = new ZkRwSide(core, read, write, 'read');
    this.#write = new ZkRwSide(core, write, read, 'write');
  }

  /** The shared side: many readers at once, none while a writer holds. */
  readLock(): ZkRwSide {
    return this.#read;
  }
  /** The exclusive side. */
  writeLock(): ZkRwSide {
    return this.#write;
  }

  /** The queue of read and write nodes in order (holders first); `kind` is `read` or `write`. */
  async queue(): Promise<
    {
      /** The znode's name. */
      node: string;
      /** `read` or `write`. */
      kind: string;
    }[]
  > {
    return (await readQueue(this.core, this.#read.spec.dir)).map((node) => ({ node, kind: kindOf(node) }));
  }
}

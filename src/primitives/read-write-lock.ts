/**
 * The read-write lock: many readers or one writer.
 *
 * - Reentrant both ways, per owner (an async call chain inside `withLock`, or an explicit `owner` id).
 * - Downgrade: the owner of the write lock may take the read lock, then release the write lock.
 * - Upgrade refused: an owner holding the read lock that asks for the write lock gets `UpgradeRefusedError` at
 *   once (two readers upgrading would wait on each other forever).
 * - Writers are not starved: a waiting writer leaves an *intent* in Redis; while one lives, new readers wait
 *   (readers that already hold the read lock may re-enter). The intent is refreshed while the writer waits and
 *   expires `writerIntent` ms after a waiting writer crashes.
 * - Each reader has its own lease (a zset of owner → expiry in Redis time), so a crashed reader frees its share
 *   after its lease; the watchdog renews leases of live holders.
 * - The write lock mints a fencing token from the name's counter (shared with `holdfast.lock(name)`).
 *
 * The read-write lock's keys are its own: `holdfast.lock(name)` and `holdfast.readWriteLock(name)` are two
 * different locks that share only the fencing counter.
 *
 * @module
 */
import type { Core } from '../core.js';
import { LockNotHeldError, UpgradeRefusedError } from '../errors.js';
import { now } from '../internal/clock.js';
import { ownerFingerprint } from '../internal/fingerprint.js';
import { LeasedHeld, type Hold } from '../internal/hold.js';
import type { EventSource, ReleaseEvent, WaitUntilFreeOptions } from '../internal/events.js';
import { OwnedLock, type Acquiring, type Acquisition, type FreeSpec, type PrimitiveSpec, type ReleaseMode } from '../internal/primitive.js';
import { checkKnownKeys, checkName, checkOptions, optDuration } from '../internal/validate.js';
import { retryAfterPttl, type Attempt } from '../internal/wait.js';
import { scripts } from '../lua/scripts.gen.js';
import type { AcquireOptions } from './lock.js';

const ACQUIRE_KEYS = ['timeout', 'lease', 'signal', 'owner', 'replicaSync'] as const;

/** Options of `holdfast.readWriteLock(name, options)`. */
export interface ReadWriteLockOptions {
  /**
   * How long a waiting writer's intent lives in Redis, in ms. While it lives, new readers wait; a waiting writer
   * refreshes it every third of this; if the writer dies, new readers are held back at most this long.
   * @default 5000
   */
  writerIntent?: number;
}

const RW_OPTION_KEYS = ['writerIntent'] as const;

/** A point-in-time view of a read-write lock in Redis. */
export interface ReadWriteLockInfo {
  /** The lock's name. */
  name: string;
  /** The owner id of the writer, or `null`. */
  writer: string | null;
  /** The writer's hold count (0 when no writer). */
  writeHoldCount: number;
  /** The writer's fencing token (0 when no writer). */
  token: number;
  /** ms until the writer's lease runs out, or `null` when no writer. */
  remainingTtl: number | null;
  /** How many owners hold the read lock. */
  readers: number;
  /** How many writers are waiting (live intents). */
  waitingWriters: number;
  /** The last fencing token minted from this name's counter (shared with the other names of its Cluster slot): at least the token of every acquisition of this name so far. */
  lastToken: number;
}

/** Options of `isHeld` and `holdCount` on either side of a read-write lock. */
export interface HeldByOptions {
  /**
   * The owner id to ask about.
   * @default the owner this async call chain holds the lock under (inside `withLock` of this name), if any
   */
  owner?: string;
}

const HELD_BY_KEYS = ['owner'] as const;

/** One reader of a read-write lock, as `ReadLock.readers()` reports it. */
export interface ReaderInfo {
  /** The first 12 hex digits of the SHA-1 of the reader's owner id: tells readers apart, never reveals the id. */
  fingerprint: string;
  /** The reader's hold count (re-entries). */
  holdCount: number;
  /** ms until the reader's lease runs out. */
  remainingTtl: number;
}

export { ownerFingerprint };

/** One acquisition of the read lock. Release it once (`release()` or `await using`). */
export class HeldReadLock extends LeasedHeld {
  /** The fingerprint of this hold's owner, as `ReadLock.readers()` lists it. */
  get fingerprint(): string {
    return ownerFingerprint(this.owner);
  }
}

/** One acquisition of the write lock, with its fencing token. Release it once (`release()` or `await using`). */
export class HeldWriteLock extends LeasedHeld {
  readonly #rw: ReadWriteLock;

  /** @internal */
  constructor(hold: Hold, holdCount: number, rw: ReadWriteLock) {
    super(hold, holdCount);
    this.#rw = rw;
  }

  /** The fencing token: strictly greater than every token minted before for this name. */
  get token(): number {
    return this.hold.token;
  }

  /**
   * Downgrade: takes the read lock under this owner, then releases this write hold. No other writer can get in
   * between. Returns the read hold.
   * @throws {LockNotHeldError} when the write lock was lost
   */
  async downgrade(options?: Omit<AcquireOptions, 'owner'>): Promise<HeldReadLock> {
    const opts = checkOptions<AcquireOptions>(options);
    if ('owner' in opts) throw new TypeError('options.owner is not accepted by downgrade(): the write lock owner is used');
    const rw = this.#rw;
    // The owner holds the write lock, so the read lock is granted at once unless the write lock was lost.
    const read = await rw.readLock().tryAcquire({ ...opts, owner: this.owner });
    if (!read) throw new LockNotHeldError(this.name, `write lock "${this.name}" was no longer held when downgrading`);
    await this.release();
    return read;
  }
}

/** What `withLock` hands the callback of a read lock. */
export interface ReadLockScope {
  /** Aborts with a `LockLostError` if the read lock is lost while `fn` runs. */
  signal: AbortSignal;
  /** The held read lock. */
  lock: HeldReadLock;
}

/** What `withLock` hands the callback of a write lock. */
export interface WriteLockScope {
  /** Aborts with a `LockLostError` if the write lock is lost while `fn` runs. */
  signal: AbortSignal;
  /** The fencing token of this hold. */
  token: number;
  /** The held write lock. */
  lock: HeldWriteLock;
}

/** What the read and the write side share besides the template: who holds them. */
abstract class Side<H extends LeasedHeld, S> extends OwnedLock<H, S, AcquireOptions> {
  readonly #spec: SideSpec<H>;

  /** @internal */
  constructor(spec: SideSpec<H>, scope: (held: H) => S) {
    super(spec.rw.core, spec.rw.name, spec, scope);
    this.#spec = spec;
  }

  /** The owner asked about: `options.owner`, else the one this async call chain holds the lock under, if any. */
  #askedOwner(options: unknown): string | undefined {
    const opts = checkOptions<HeldByOptions>(options);
    checkKnownKeys(opts, HELD_BY_KEYS);
    if (opts.owner !== undefined) return checkName(opts.owner, 'options.owner');
    const inherited = this.core.context.getStore()?.get(this.#spec.contextKey);
    return inherited?.active() ? inherited.owner : undefined;
  }

  /**
   * The hold count of an owner on this side in Redis (0 when it holds nothing): `options.owner`, or the owner this
   * async call chain holds the lock under (Redisson's `getHoldCount`: 0 outside `withLock`).
   */
  async holdCount(options?: HeldByOptions): Promise<number> {
    const owner = this.#askedOwner(options);
    this.core.assertOpen();
    return owner === undefined ? 0 : ((await this.#spec.inspectOwner(owner))?.holdCount ?? 0);
  }

  /**
   * True when an owner holds this side: `options.owner`, or the owner this async call chain holds the lock under
   * (Redisson's `isHeldByCurrentThread`: false outside `withLock`).
   */
  async isHeld(options?: HeldByOptions): Promise<boolean> {
    return (await this.holdCount(options)) > 0;
  }
}

/**
 * One side as its template runs it: one small object per handle, its key names built on first use. The scripts
 * build the lock's channels from the writer key. Inside `withLock` (its whole async call chain) the read and the
 * write lock of this name are acquired under the same owner: re-entry raises the hold count, a read inside a write
 * is a downgrade, a write inside a read is refused with `UpgradeRefusedError`.
 */
abstract class SideSpec<H extends LeasedHeld> implements PrimitiveSpec<H> {
  abstract readonly kind: 'read-lock' | 'write-lock';
  readonly acquireKeys = ACQUIRE_KEYS;
  #keys: { renew: string[]; release: string[]; acquire: string[] } | undefined;

  constructor(readonly rw: ReadWriteLock) {}

  get core(): Core {
    return this.rw.core;
  }
  get contextKey(): string {
    return this.rw.contextKey;
  }
  get syncKey(): string {
    return this.rw.contextKey; // the writer key: every key of the lock is in its slot
  }
  get channel(): string {
    return this.core.keys.rwChannel(this.rw.name);
  }

  /** Key names: of the renew, the release (without a marker) and the acquire script of this side. */
  keys(): { renew: string[]; release: string[]; acquire: string[] } {
    if (this.#keys) return this.#keys;
    const { core, name } = this.rw;
    const k = core.keys;
    const [writer, readers, counts, intents] = [k.rwWriter(name), k.rwReaders(name), k.rwReadCounts(name), k.rwIntents(name)];
    return (this.#keys =
      this.kind === 'read-lock'
        ? { renew: [readers, counts, intents], release: [readers, counts, intents, writer, k.rwObserved(name)], acquire: [writer, readers, counts, intents] }
        : { renew: [writer], release: [writer, k.rwObserved(name), readers], acquire: [writer, readers, counts, intents, k.fence(name)] });
  }

  async renew(owner: string, leaseMs: number): Promise<boolean> {
    const script = this.kind === 'read-lock' ? scripts['rw/read-renew'] : scripts['owned/renew'];
    return (await this.core.run(script, this.keys().renew, [owner, leaseMs])) === 1;
  }

  release(owner: string, mode: ReleaseMode, marker: string | undefined): Promise<number> {
    const core = this.core;
    const keys = this.keys().release;
    return core.run(
      this.kind === 'read-lock' ? scripts['rw/read-release'] : scripts['rw/write-release'],
      marker === undefined ? keys : [...keys, marker],
      marker === undefined ? [owner, mode] : [owner, mode, core.settings.releaseMarkerTtl],
    );
  }

  abstract inspectOwner(owner: string): Promise<{ holdCount: number; token: number } | null>;
  abstract wrap(hold: Hold, holdCount: number): H;
  abstract start(a: Acquiring<H>): Acquisition<H>;
}

class ReadSpec extends SideSpec<HeldReadLock> implements FreeSpec {
  readonly kind = 'read-lock';

  /** `rw/readers`: `[owner's count, owner's ms left, fingerprint, count, ms left, …]`. */
  async readers(owner: string): Promise<unknown[]> {
    return await this.core.run(scripts['rw/readers'], this.keys().renew, [owner]);
  }
  async inspectOwner(owner: string): Promise<{ holdCount: number; token: number } | null> {
    const count = Number((await this.readers(owner))[0]);
    return count > 0 ? { holdCount: count, token: 0 } : null;
  }
  wrap(hold: Hold, holdCount: number): HeldReadLock {
    return new HeldReadLock(hold, holdCount);
  }
  start(a: Acquiring<HeldReadLock>): Acquisition<HeldReadLock> {
    return {
      attempt: async (budget): Promise<Attempt<HeldReadLock>> => {
        const sentAt = now();
        const reply = await this.core.run(scripts['rw/read-acquire'], this.keys().acquire, [a.owner, a.leaseMs], budget);
        if (reply[0] === 1) return { done: true, value: a.grant(0, reply[1] ?? 1, sentAt) };
        return { done: false, retryInMs: retryAfterPttl(reply[1] ?? -2) };
      },
    };
  }

  // A new reader would be let in at once when no writer holds the lock or waits for it (readers may hold it).
  get free(): FreeSpec {
    return this;
  }
  get source(): string {
    return this.channel;
  }
  async busyFor(): Promise<number | null> {
    const info = await this.rw.inspect();
    if (info.writer !== null) return info.remainingTtl ?? -1;
    return info.waitingWriters > 0 ? this.rw.writerIntent : null;
  }
  freeOn(): boolean {
    return false; // every wake-up of the lock makes it look again
  }
}

class WriteSpec extends SideSpec<HeldWriteLock> implements FreeSpec {
  readonly kind = 'write-lock';

  async inspectOwner(owner: string): Promise<{ holdCount: number; token: number } | null> {
    const info = await this.rw.inspect();
    return info.writer === owner ? { holdCount: info.writeHoldCount, token: info.token } : null;
  }
  wrap(hold: Hold, holdCount: number): HeldWriteLock {
    return new HeldWriteLock(hold, holdCount, this.rw);
  }
  start(a: Acquiring<HeldWriteLock>): Acquisition<HeldWriteLock> {
    const intent = this.rw.writerIntent;
    const waiting = a.timeout !== 0;
    return {
      attempt: async (budget): Promise<Attempt<HeldWriteLock>> => {
        const sentAt = now();
        const reply = await this.core.run(scripts['rw/write-acquire'], this.keys().acquire, [a.owner, a.leaseMs, waiting ? intent : 0], budget);
        if (reply[0] === 1) return { done: true, value: a.grant(reply[1] ?? 0, reply[2] ?? 1, sentAt) };
        if (reply[0] === -1) throw new UpgradeRefusedError(this.rw.name);
        const pttl = reply[1] ?? -2;
        // Come back before the intent lapses, so new readers keep waiting behind this writer.
        const refresh = Math.max(1, Math.floor(intent / 3));
        return { done: false, retryInMs: pttl === -2 ? 0 : pttl < 0 ? refresh : Math.min(pttl, refresh) };
      },
      /** A waiting writer that gives up takes its intent back. */
      withdraw: async (): Promise<void> => {
        const k = this.core.keys;
        await this.core.run(scripts['rw/withdraw'], [k.rwIntents(this.rw.name)], [a.owner, k.rwChannel(this.rw.name)]);
      },
    };
  }

  // Free when neither a writer nor any reader holds the lock.
  get free(): FreeSpec {
    return this;
  }
  /** Where this lock's releases are published while someone observes it. */
  get source(): EventSource {
    const k = this.core.keys;
    return { channel: k.rwEvents(this.rw.name), marker: k.rwObserved(this.rw.name) };
  }
  async busyFor(): Promise<number | null> {
    const info = await this.rw.inspect();
    if (info.writer !== null) return info.remainingTtl ?? -1;
    if (info.readers === 0) return null;
    return (await this.rw.readLock().remainingTtl()) ?? 0; // the last reader left meanwhile: look again at once
  }
  /** 'w1', 'r1': a release that left it free; 'a': a force-unlock; 'w0', 'r0': readers still hold it. */
  freeOn(message: string): boolean {
    return message !== 'w0' && message !== 'r0';
  }
  parse(message: string): Omit<ReleaseEvent, 'name'> {
    return message === 'a' ? { kind: 'force-unlock' } : { kind: 'release', side: message.startsWith('w') ? 'write' : 'read' };
  }
}

/** The read side of a {@link ReadWriteLock}. Same API as `Lock`. */
export class ReadLock extends Side<HeldReadLock, ReadLockScope> {
  readonly #spec: ReadSpec;

  /** @internal */
  constructor(rw: ReadWriteLock) {
    const spec = new ReadSpec(rw);
    super(spec, (held) => ({ signal: held.signal, lock: held }));
    this.#spec = spec;
  }

  /**
   * Who holds the read lock now: each reader's owner fingerprint (never the owner id), hold count and remaining
   * lease, longest lease first. Compare with `HeldReadLock.fingerprint` or `ownerFingerprint(ownerId)`.
   */
  async readers(): Promise<ReaderInfo[]> {
    this.core.assertOpen();
    const reply = await this.#spec.readers('');
    const readers: ReaderInfo[] = [];
    for (let i = 2; i + 2 < reply.length; i += 3) {
      readers.push({ fingerprint: String(reply[i]), holdCount: Number(reply[i + 1]), remainingTtl: Number(reply[i + 2]) });
    }
    return readers;
  }

  /**
   * ms until the last reader's lease runs out (Redisson's `remainTimeToLive` on the read lock), or `null` when nobody
   * holds the read lock.
   */
  async remainingTtl(): Promise<number | null> {
    const readers = await this.readers();
    return readers[0]?.remainingTtl ?? null;
  }

  /**
   * Waits, without taking it, until a new reader would be let in at once (no writer holds the lock or waits for it;
   * readers may hold it) → `true`; `false` when `timeout` passes first.
   * @throws the signal's reason when `signal` aborts
   */
  override waitUntilFree(options?: WaitUntilFreeOptions): Promise<boolean> {
    return super.waitUntilFree(options);
  }
}

/** The write side of a {@link ReadWriteLock}. Same API as `Lock`, plus `token` and `downgrade()` on the held lock. */
export class WriteLock extends Side<HeldWriteLock, WriteLockScope> {
  /** @internal */
  constructor(rw: ReadWriteLock) {
    super(new WriteSpec(rw), (held) => ({ signal: held.signal, token: held.token, lock: held }));
  }

  /** ms until the writer's lease runs out, or `null` when nobody holds the write lock. */
  async remainingTtl(): Promise<number | null> {
    return (await this.#rw.inspect()).remainingTtl;
  }

  /** {@link ReadWriteLock.waitUntilFree}: until neither a writer nor any reader holds the lock. */
  override waitUntilFree(options?: WaitUntilFreeOptions): Promise<boolean> {
    return super.waitUntilFree(options);
  }

  get #rw(): ReadWriteLock {
    return (this.template.spec as WriteSpec).rw;
  }
}

/**
 * A distributed read-write lock, from `holdfast.readWriteLock(name)`. A cheap handle: `readLock()` and
 * `writeLock()` return handles with the same API as `Lock` (`acquire`, `tryAcquire`, `withLock`).
 *
 * @example
 * ```ts
 * const rw = holdfast.readWriteLock('catalog');
 * const price = await rw.readLock().withLock(() => readPrice());
 * await using w = await rw.writeLock().acquire({ timeout: 5000 });
 * await writePrice({ fence: w.token });
 * ```
 */
export class ReadWriteLock {
  /** @internal */
  readonly writerIntent: number;
  #read: ReadLock | undefined;
  #write: WriteLock | undefined;
  #contextKey: string | undefined;

  /** @internal */
  constructor(
    /** @internal */
    readonly core: Core,
    /** The lock's name. */
    readonly name: string,
    options?: ReadWriteLockOptions,
  ) {
    const opts = checkOptions<ReadWriteLockOptions>(options);
    checkKnownKeys(opts, RW_OPTION_KEYS);
    this.writerIntent = optDuration(opts.writerIntent, 'options.writerIntent', 30) ?? 5000;
  }

  /** @internal The async-context key shared by both sides (so a read inside a write is a downgrade). */
  get contextKey(): string {
    return (this.#contextKey ??= this.core.keys.rwWriter(this.name));
  }

  /** The read side: shared with other readers, excluded by a writer. */
  readLock(): ReadLock {
    return (this.#read ??= new ReadLock(this));
  }

  /** The write side: exclusive. */
  writeLock(): WriteLock {
    return (this.#write ??= new WriteLock(this));
  }

  /**
   * Deletes the writer and every reader whoever holds them, and wakes every waiter (waiting writers keep their place
   * before new readers). The holders' signals abort at their next renewal (watchdog) or lease end. For operators:
   * prefer letting leases expire.
   * @returns true when a writer or a reader was deleted
   */
  async forceUnlock(): Promise<boolean> {
    this.core.assertOpen();
    const k = this.core.keys;
    const keys = [k.rwWriter(this.name), k.rwReaders(this.name), k.rwReadCounts(this.name), k.rwIntents(this.name), k.rwObserved(this.name)];
    return (await this.core.run(scripts['rw/force-unlock'], keys, [k.rwChannel(this.name), k.rwEvents(this.name)])) === 1;
  }

  /**
   * Waits, without taking it, until neither a writer nor any reader holds the lock, or a release that left it so is
   * heard → `true`; `false` when `timeout` passes first. See `Lock.waitUntilFree`.
   * @throws the signal's reason when `signal` aborts
   */
  waitUntilFree(options?: WaitUntilFreeOptions): Promise<boolean> {
    return this.writeLock().waitUntilFree(options);
  }

  /** Calls `listener` for each side's release (with `side`) and each force-unlock, by any process, until the returned function is called. */
  onRelease(listener: (event: ReleaseEvent) => void): Promise<() => void> {
    return this.writeLock().template.onRelease(listener);
  }

  /** Reads writer, readers and waiting writers in one step. */
  async inspect(): Promise<ReadWriteLockInfo> {
    this.core.assertOpen();
    const k = this.core.keys;
    const reply = await this.core.run(
      scripts['rw/inspect'],
      [k.rwWriter(this.name), k.rwReaders(this.name), k.rwReadCounts(this.name), k.rwIntents(this.name), k.fence(this.name)],
      [],
    );
    const [writer, count, token, pttl, readers, waitingWriters, lastToken] = reply;
    return {
      name: this.name,
      writer: writer ?? null,
      writeHoldCount: count,
      token,
      remainingTtl: writer ? pttl : null,
      readers,
      waitingWriters,
      lastToken,
    };
  }
}

/**
 * The in-memory keyspace of the memory backend: typed values, expiry (lazy on access, and an unref'd sweeper that
 * frees what nobody reads again), the pub/sub channels and the store's clock.
 *
 * @module
 */

/** A Redis error reply (`WRONGTYPE …`, `ERR …`, `NOSCRIPT …`): raised as the clients raise theirs. */
export class MemoryReplyError extends Error {
  constructor(message: string) {
    super(message);
    // the name the ioredis client gives its error replies: holdfast reads it as "the server refused", not as a lost connection
    this.name = 'ReplyError';
  }
}

/** A sorted set: scores by member, and the members in order (score, then member), rebuilt when read after a change. */
export class ZSet {
  readonly scores = new Map<string, number>();
  #sorted: string[] | undefined = [];

  get size(): number {
    return this.scores.size;
  }

  set(member: string, score: number): void {
    this.scores.set(member, score);
    this.#sorted = undefined;
  }

  delete(member: string): boolean {
    const had = this.scores.delete(member);
    if (had) this.#sorted = undefined;
    return had;
  }

  /** The members, lowest score first (ties by member, byte order). */
  ordered(): readonly string[] {
    if (this.#sorted === undefined) {
      const scores = this.scores;
      this.#sorted = [...scores.keys()].sort((a, b) => scores.get(a)! - scores.get(b)! || (a < b ? -1 : a > b ? 1 : 0));
    }
    return this.#sorted;
  }
}

/** A value of the keyspace. */
export type Value =
  | { readonly type: 'string'; value: string }
  | { readonly type: 'hash'; readonly value: Map<string, string> }
  | { readonly type: 'list'; readonly value: string[] }
  | { readonly type: 'zset'; readonly value: ZSet };

/** A subscriber registered on the store's channels. */
export interface ChannelListener {
  deliver(channel: string, message: string): void;
}

/** Options of {@link MemoryStore}. */
export interface MemoryStoreOptions {
  /**
   * The store's clock in ms since the epoch: what `TIME` answers and what key expiry compares with. Key expiry is
   * lazy (a key past its time is gone when next touched), so any clock works, e.g. a test's own.
   * @default Date.now
   */
  clock?: () => number;
  /**
   * How often, in ms, an unref'd timer frees expired keys that nobody touches again (memory only: an expired key is
   * never seen either way).
   * @default 1000
   */
  sweepInterval?: number;
}

const WRONGTYPE = 'WRONGTYPE Operation against a key holding the wrong kind of value';

/**
 * One in-process "Redis server" (made by `memoryStore()`): the keyspace, its expiry, its pub/sub channels and its
 * loaded scripts. Pass one store to several `memoryRedis({ store })` to play several service instances against one
 * "server".
 */
export interface MemoryStore {
  /** The store's time in ms: its clock, plus what {@link MemoryStore.advance} added. */
  now(): number;
  /**
   * Moves the store's time forward by `ms`: leases and every other key expire as if that time had passed (holdfast's
   * own timers, its watchdog's included, still run in real time). For tests.
   */
  advance(ms: number): void;
  /** Empties the store and stops its timer. Idempotent. Connections to it fail from then on. */
  close(): void;
  /** True once closed. */
  readonly closed: boolean;
}

/** The implementation of {@link MemoryStore}, for the backend's own modules. */
export class Keyspace implements MemoryStore {
  readonly #data = new Map<string, Value>();
  readonly #expires = new Map<string, number>();
  readonly #channels = new Map<string, Set<ChannelListener>>();
  readonly #clock: () => number;
  #offset = 0;
  /** Set while a script runs: Redis reads the clock once per script, so a key does not expire halfway through it. */
  #frozen: number | undefined;
  #sweeper: NodeJS.Timeout | undefined;
  #closed = false;
  /** Loaded scripts by SHA1, and whatever the Lua bridge keeps for each (see lua.ts). */
  readonly scripts = new Map<string, unknown>();
  /** The Lua bridge's own state for this store (see lua.ts). */
  vm: unknown;

  constructor(options: MemoryStoreOptions = {}) {
    if (options.clock !== undefined && typeof options.clock !== 'function') throw new TypeError('options.clock must be a function returning ms');
    const sweep = options.sweepInterval ?? 1000;
    if (!Number.isFinite(sweep) || sweep <= 0) throw new TypeError(`options.sweepInterval must be a positive number of ms, got ${String(sweep)}`);
    this.#clock = options.clock ?? Date.now;
    this.#sweeper = setInterval(() => this.sweep(), sweep);
    this.#sweeper.unref();
  }

  /** The store's time in ms: its clock, plus what {@link advance} added. */
  now(): number {
    return this.#frozen ?? this.#clock() + this.#offset;
  }

  /**
   * Moves the store's time forward by `ms`: leases and every other key expire as if that time had passed (holdfast's
   * own timers, its watchdog's included, still run in real time). For tests.
   */
  advance(ms: number): void {
    if (!Number.isFinite(ms) || ms < 0) throw new RangeError(`advance(ms): ms must be a finite number ≥ 0, got ${String(ms)}`);
    this.#offset += ms;
  }

  /** Runs `fn` with the clock read once (as Redis does for a script). */
  frozen<T>(fn: () => T): T {
    if (this.#frozen !== undefined) return fn();
    this.#frozen = this.#clock() + this.#offset;
    try {
      return fn();
    } finally {
      this.#frozen = undefined;
    }
  }

  get closed(): boolean {
    return this.#closed;
  }

  /** Empties the store and stops its timer. Idempotent. Connections to it fail from then on. */
  close(): void {
    this.#closed = true;
    if (this.#sweeper) clearInterval(this.#sweeper);
    this.#sweeper = undefined;
    this.#data.clear();
    this.#expires.clear();
    this.#channels.clear();
    this.scripts.clear();
    this.vm = undefined;
  }

  /** Frees every expired key. */
  sweep(): void {
    const now = this.now();
    for (const [key, at] of this.#expires) {
      if (at <= now) {
        this.#expires.delete(key);
        this.#data.delete(key);
      }
    }
  }

  /** The live value at `key` (an expired one is removed first). */
  get(key: string): Value | undefined {
    const at = this.#expires.get(key);
    if (at !== undefined && at <= this.now()) {
      this.#expires.delete(key);
      this.#data.delete(key);
      return undefined;
    }
    return this.#data.get(key);
  }

  /** The value at `key` if it is of `type`; `WRONGTYPE` if it is of another. */
  getTyped<T extends Value['type']>(key: string, type: T): Extract<Value, { type: T }> | undefined {
    const v = this.get(key);
    if (v === undefined) return undefined;
    if (v.type !== type) throw new MemoryReplyError(WRONGTYPE);
    return v as Extract<Value, { type: T }>;
  }

  /** The value at `key` of `type`, created empty when missing. */
  getOrCreate<T extends Exclude<Value['type'], 'string'>>(key: string, type: T): Extract<Value, { type: T }> {
    const v = this.getTyped(key, type);
    if (v) return v;
    const made = (type === 'hash' ? { type, value: new Map() } : type === 'list' ? { type, value: [] } : { type, value: new ZSet() }) as Extract<
      Value,
      { type: T }
    >;
    this.#data.set(key, made);
    return made;
  }

  /** Sets a string, dropping any expiry unless `keepTtl`. */
  setString(key: string, value: string, keepTtl = false): void {
    const v = this.get(key);
    if (v?.type === 'string') v.value = value;
    else this.#data.set(key, { type: 'string', value });
    if (!keepTtl) this.#expires.delete(key);
  }

  /** Deletes `key`; true if it existed. */
  delete(key: string): boolean {
    const existed = this.get(key) !== undefined;
    this.#data.delete(key);
    this.#expires.delete(key);
    return existed;
  }

  /** Removes an emptied hash, list or sorted set (Redis never keeps an empty one). */
  dropIfEmpty(key: string): void {
    const v = this.#data.get(key);
    if (v === undefined || v.type === 'string') return;
    const size = v.type === 'zset' ? v.value.size : v.type === 'hash' ? v.value.size : v.value.length;
    if (size === 0) this.delete(key);
  }

  /** The absolute expiry of a live key in ms, or undefined when it has none. */
  expiryOf(key: string): number | undefined {
    return this.#expires.get(key);
  }

  /** Sets the absolute expiry of an existing key; a time already past deletes it. */
  expireAt(key: string, at: number): void {
    if (at <= this.now()) this.delete(key);
    else this.#expires.set(key, at);
  }

  /** Removes the expiry of `key`; true if it had one. */
  persist(key: string): boolean {
    return this.#expires.delete(key);
  }

  /** Every live key. */
  keys(): string[] {
    const out: string[] = [];
    for (const key of this.#data.keys()) if (this.get(key) !== undefined) out.push(key);
    return out;
  }

  /** Empties the keyspace (the scripts stay loaded). */
  flush(): void {
    this.#data.clear();
    this.#expires.clear();
  }

  /** Registers `listener` on `channel` (`sharded`: the shard channels of SSUBSCRIBE, a namespace of their own). */
  listen(channel: string, sharded: boolean, listener: ChannelListener): void {
    const name = (sharded ? 's' : 'c') + channel;
    let set = this.#channels.get(name);
    if (!set) this.#channels.set(name, (set = new Set()));
    set.add(listener);
  }

  /** Removes `listener` from `channel`. */
  unlisten(channel: string, sharded: boolean, listener: ChannelListener): void {
    const name = (sharded ? 's' : 'c') + channel;
    const set = this.#channels.get(name);
    if (!set) return;
    set.delete(listener);
    if (set.size === 0) this.#channels.delete(name);
  }

  /**
   * Publishes `message` on `channel`; returns how many subscribers it reached. Delivery is asynchronous, in order, after
   * the command (or script) that published: like a message that crosses a connection.
   */
  publish(channel: string, message: string, sharded: boolean): number {
    const set = this.#channels.get((sharded ? 's' : 'c') + channel);
    if (!set || set.size === 0) return 0;
    const listeners = [...set];
    queueMicrotask(() => {
      for (const l of listeners) l.deliver(channel, message);
    });
    return listeners.length;
  }
}

/**
 * The memory backend as a {@link RedisTransport}: what `new Holdfast({ redis: memoryRedis() })` talks to.
 *
 * @module
 */
import type { RedisSubscriber, RedisTransport, ScriptArgs } from '../client.js';
import { runCommand, Status, type Reply } from './commands.js';
import { Keyspace, MemoryReplyError, type ChannelListener, type MemoryStore, type MemoryStoreOptions } from './keyspace.js';
import { ensureVm, loadScript, runScript } from './lua.js';

/** Options of {@link memoryRedis}. */
export interface MemoryRedisOptions extends MemoryStoreOptions {
  /**
   * The store to connect to: several `memoryRedis({ store })` share one keyspace, like several service instances
   * connected to one Redis. Such a connection's `close()` leaves the store open (close it with `store.close()`).
   * `clock` and `sweepInterval` apply only to a store made here.
   * @default a new store of its own, closed by `close()`
   */
  store?: MemoryStore;
  /**
   * Keep the process alive while this connection is open, as an open socket does (close it with `close()`). Without
   * it the connection keeps the process alive only while holdfast waits on it (an open subscription: a waiter, a
   * release listener) or a `WAIT` runs, so a program exits once its work is done, even one that forgot `close()`; but
   * a program whose only pending work is a lease running out (awaiting a loss signal) exits before it fires.
   * @default false
   */
  keepAlive?: boolean;
}

/** A connection to a {@link MemoryStore}: pass it where holdfast takes a Redis client. */
export interface MemoryRedis extends RedisTransport {
  readonly kind: 'memory';
  /** The store this connection talks to. */
  readonly store: MemoryStore;
  /**
   * Closes the connection and its subscribers; closes its store too when `memoryRedis()` made it. Idempotent. Calls
   * after it reject.
   */
  close(): Promise<void>;
}

/** A reply as a client hands it over: a status becomes its string. */
function toClient(reply: Reply): unknown {
  if (reply instanceof Status) return reply.status;
  if (Array.isArray(reply)) return reply.map(toClient);
  return reply;
}

function closedError(): Error {
  return new Error('Connection is closed.');
}

/**
 * Makes a store: one in-process "Redis server" that several {@link memoryRedis} connections may share.
 *
 * ```ts
 * const store = memoryStore();
 * const a = new Holdfast({ redis: memoryRedis({ store }) });   // service instance A
 * const b = new Holdfast({ redis: memoryRedis({ store }) });   // service instance B: same locks
 * ```
 */
export function memoryStore(options: MemoryStoreOptions = {}): MemoryStore {
  return new Keyspace(options);
}

/**
 * An in-process Redis for holdfast: every primitive runs on it without a server, through holdfast's own Lua scripts
 * (run by the fengari Lua VM, an optional peer dependency) on an in-memory keyspace with real key expiry and pub/sub.
 * For tests and single-process programs; it is not shared between processes.
 *
 * ```ts
 * import { Holdfast } from 'holdfast';
 * import { memoryRedis } from 'holdfast/memory';
 * const holdfast = new Holdfast({ redis: memoryRedis() });
 * ```
 */
export function memoryRedis(options: MemoryRedisOptions = {}): MemoryRedis {
  if (typeof options !== 'object' || options === null) throw new TypeError('memoryRedis(options): options must be an object');
  if (options.store !== undefined && !(options.store instanceof Keyspace)) {
    throw new TypeError('options.store must be a store made by memoryStore()');
  }
  const owned = options.store === undefined;
  const store = options.store ?? new Keyspace(options);
  const subscribers = new Set<RedisSubscriber>();
  const timers = new Set<NodeJS.Timeout>();
  let closed = false;
  // start loading the Lua VM now (fengari, once per process; a fresh VM per store), so the first script call finds it ready
  if (!store.vm) void ensureVm(store).catch(() => {});
  let alive = options.keepAlive === true ? setInterval(() => {}, 1 << 30) : undefined;

  const check = (): void => {
    if (closed || store.closed) throw closedError();
  };
  /** Commands go in order: while the VM loads, every call waits behind it. */
  const ready = async (): Promise<void> => {
    check();
    if (!store.vm) await ensureVm(store);
    check();
  };

  const transport: MemoryRedis = {
    kind: 'memory',
    store,
    async evalsha(sha, keys, args: ScriptArgs) {
      await ready();
      return toClient(runScript(store, sha, keys, args));
    },
    async eval(script, keys, args: ScriptArgs) {
      await ready();
      return toClient(runScript(store, loadScript(store, script), keys, args));
    },
    async command(args) {
      await ready();
      const name = args[0]?.toLowerCase();
      if (name === 'script') return toClient(scriptCommand(store, args.slice(1)));
      if (name === 'eval' || name === 'evalsha') return toClient(evalCommand(store, args));
      if (name === 'wait') {
        // a lone server: no replica acknowledges, so WAIT waits its whole timeout (0: forever) and answers 0; like a
        // command in flight on a socket, the wait keeps the process alive
        const reply = runCommand(store, args);
        const wanted = Number(args[1]);
        const timeout = Number(args[2]);
        if (wanted <= 0) return 0;
        if (timeout === 0) return new Promise(() => {});
        await new Promise<void>((resolve) => {
          const t = setTimeout(() => {
            timers.delete(t);
            resolve();
          }, timeout);
          timers.add(t);
        });
        return toClient(reply);
      }
      return toClient(runCommand(store, args));
    },
    async createSubscriber(onMessage, sharded) {
      check();
      const channels = new Set<string>();
      let open = true;
      // a subscription keeps the process alive, as a subscribed socket does: a waiter's wake-up may come from it
      let keepAlive: NodeJS.Timeout | undefined;
      const hold = (): void => {
        if (channels.size > 0 && open) keepAlive ??= setInterval(() => {}, 1 << 30);
        else if (keepAlive) {
          clearInterval(keepAlive);
          keepAlive = undefined;
        }
      };
      const listener: ChannelListener = {
        deliver(channel, message) {
          if (open && channels.has(channel)) onMessage(channel, message);
        },
      };
      const sub: RedisSubscriber = {
        async subscribe(channel) {
          if (!open) throw closedError();
          channels.add(channel);
          store.listen(channel, sharded, listener);
          hold();
        },
        async unsubscribe(channel) {
          channels.delete(channel);
          store.unlisten(channel, sharded, listener);
          hold();
        },
        async close() {
          if (!open) return;
          open = false;
          for (const c of channels) store.unlisten(c, sharded, listener);
          channels.clear();
          hold();
          subscribers.delete(sub);
        },
      };
      subscribers.add(sub);
      return sub;
    },
    async close() {
      if (closed) return;
      closed = true;
      if (alive) clearInterval(alive);
      alive = undefined;
      for (const t of timers) clearTimeout(t);
      timers.clear();
      await Promise.all([...subscribers].map((s) => s.close()));
      if (owned) store.close();
    },
  };
  return transport;
}

/** `SCRIPT LOAD | EXISTS | FLUSH`. */
export function scriptCommand(store: Keyspace, args: readonly string[]): Reply {
  const sub = args[0]?.toLowerCase();
  if (sub === 'load' && args.length === 2) return loadScript(store, args[1]!);
  if (sub === 'exists') return args.slice(1).map((sha) => (store.scripts.has(sha.toLowerCase()) ? 1 : 0));
  if (sub === 'flush') {
    store.scripts.clear();
    return new Status('OK');
  }
  throw new MemoryReplyError(`ERR unknown subcommand or wrong number of arguments for '${args[0] ?? ''}'. Try SCRIPT HELP.`);
}

/** `EVAL script numkeys ...` / `EVALSHA sha numkeys ...` sent as a plain command. */
export function evalCommand(store: Keyspace, args: readonly string[]): Reply {
  const numKeys = Number(args[2]);
  if (args.length < 3 || !Number.isInteger(numKeys)) throw new MemoryReplyError(`ERR wrong number of arguments for '${args[0]}' command`);
  if (numKeys < 0 || numKeys > args.length - 3) throw new MemoryReplyError("ERR Number of keys can't be greater than number of args");
  const keys = args.slice(3, 3 + numKeys);
  const rest = args.slice(3 + numKeys);
  const sha = args[0]!.toLowerCase() === 'eval' ? loadScript(store, args[1]!) : args[1]!;
  return runScript(store, sha, keys, rest);
}

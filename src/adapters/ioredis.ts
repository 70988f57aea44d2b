import type { RedisSubscriber, RedisTransport } from '../client.js';
import { slotOf } from '../keys.js';

/** The part of an ioredis `Redis` or `Cluster` the adapter uses (structural: holdfast never imports ioredis). */
export interface IoredisLike {
  /** `EVALSHA`: runs a cached script. */
  evalsha(sha: string, numKeys: number, ...rest: (string | number)[]): Promise<unknown>;
  /** `EVAL`: runs a script (after `NOSCRIPT`). */
  eval(script: string, numKeys: number, ...rest: (string | number)[]): Promise<unknown>;
  /** Any other command. */
  call(command: string, ...args: string[]): Promise<unknown>;
  /** A new connection with the same settings: holdfast's one pub/sub connection. */
  duplicate(...override: unknown[]): IoredisLike;
  /** `SUBSCRIBE` (on the duplicate). */
  subscribe(...channels: string[]): Promise<unknown>;
  /** `UNSUBSCRIBE` (on the duplicate). */
  unsubscribe(...channels: string[]): Promise<unknown>;
  /** `SSUBSCRIBE`, with `shardedPubSub`. */
  ssubscribe?(...channels: string[]): Promise<unknown>;
  /** `SUNSUBSCRIBE`, with `shardedPubSub`. */
  sunsubscribe?(...channels: string[]): Promise<unknown>;
  /** Event listener (`message`, `smessage`, `error`, `ready`). */
  on(event: string, listener: (...args: never[]) => void): unknown;
  /** Closes the connection gracefully (holdfast only closes the duplicate it opened). */
  quit(): Promise<unknown>;
  /** Closes the connection at once. */
  disconnect(): void;
  /** Present on a `Cluster`: the node key (`host:port`) of each slot's master first. */
  slots?: unknown;
  /** The connection's socket, when connected: holdfast corks it to send the commands of one turn in one write. */
  stream?: unknown;
  /** `ready` when connected; else `connecting`, `reconnecting`, `end`…: said in the error of a call without reply. */
  status?: string;
  /** Present on a `Cluster`. */
  nodes?(role?: string): IoredisLike[];
  /** Present on a node of a `Cluster`. */
  options?: {
    /** The node's host. */
    host?: string | undefined;
    /** The node's port. */
    port?: number | undefined;
  };
}

/** The socket of an ioredis connection (`client.stream`), as far as holdfast uses it. */
interface CorkableStream {
  cork(): void;
  uncork(): void;
  writable?: boolean;
}

/** Script calls of one burst that go out at once, each in its own write, before the socket is corked. */
const UNCORKED = 4;
/** While corked, the socket is flushed every this many script calls, so Redis starts on them while more are made. */
const FLUSH_EVERY = 32;

/**
 * Script calls issued in one burst (the synchronous code and promise callbacks that run before the next
 * `process.nextTick`) share socket writes. The first few go out at once, each on its own: a lone call, or a few, wait for
 * nothing. From then on the socket is corked, and flushed in one `writev` every {@link FLUSH_EVERY} calls and when the
 * burst ends. Many locks taken and released on one connection then cost a write per 32 commands instead of one per
 * command, and Redis gets the first of them while the rest are still being made, so neither side waits for the other
 * to finish a whole wave. The commands and their order are untouched.
 */
class WriteBatch {
  #count = 0;
  #corked: CorkableStream | undefined;

  constructor(private readonly client: IoredisLike) {}

  /** Called before each command is handed to ioredis. */
  before(): void {
    const count = this.#count++;
    if (count === 0) process.nextTick(this.#endBurst);
    if (count < UNCORKED) return;
    const corked = this.#corked;
    if (corked) {
      if ((count - UNCORKED) % FLUSH_EVERY === FLUSH_EVERY - 1) {
        corked.uncork();
        corked.cork();
      }
      return;
    }
    const stream = this.client.stream as CorkableStream | undefined;
    if (!stream || typeof stream.cork !== 'function' || stream.writable === false) return;
    stream.cork();
    this.#corked = stream;
  }

  readonly #endBurst = (): void => {
    this.#count = 0;
    const stream = this.#corked;
    this.#corked = undefined;
    stream?.uncork();
  };
}

/** Commands without a key that must still run on the node (and connection) of a given key: `WAIT` after a write. */
const ROUTED_BY_KEY = new Set(['WAIT', 'WAITAOF']);

function nodeFor(client: IoredisLike, key: string): IoredisLike | undefined {
  const slots = client.slots as string[][] | undefined;
  const nodeKey = slots?.[slotOf(key)]?.[0];
  if (!nodeKey || !client.nodes) return undefined;
  return client.nodes('master').find((n) => `${n.options?.host ?? ''}:${n.options?.port ?? ''}` === nodeKey);
}

/**
 * The client's state when it is not connected: its status, address and the error its last socket ended with (a
 * destroyed socket keeps it as `errored`), e.g. `ioredis reconnecting to 127.0.0.1:6379: connect ECONNREFUSED …`.
 */
function diagnose(client: IoredisLike): { state: string; cause?: Error } | undefined {
  if (client.status === undefined || client.status === 'ready') return undefined;
  const { host, port } = typeof client.nodes === 'function' ? {} : (client.options ?? {});
  const where = host === undefined ? '' : ` to ${host}:${port ?? 6379}`;
  const errored = (client.stream as { errored?: unknown } | undefined)?.errored;
  const cause = errored instanceof Error ? errored : undefined;
  return { state: `ioredis ${client.status}${where}${cause ? `: ${cause.message}` : ''}`, ...(cause ? { cause } : {}) };
}

/** True when `value` looks like an ioredis client (`Redis` or `Cluster`). */
export function isIoredis(value: unknown): value is IoredisLike {
  const v = value as Partial<IoredisLike> | null;
  return typeof v === 'object' && v !== null && typeof v.evalsha === 'function' && typeof v.call === 'function' && typeof v.duplicate === 'function';
}

/**
 * Wraps an ioredis `Redis` or `Cluster` as a {@link RedisTransport}. The client stays yours: holdfast never closes it.
 * Mind ioredis' own `keyPrefix`: it applies to every key holdfast sends, on top of holdfast's `prefix`.
 */
export function ioredisTransport(client: IoredisLike): RedisTransport {
  // ioredis resends the commands in flight after a reconnect (`autoResendUnfulfilledCommands`): count the drops.
  let epoch = 0;
  client.on('close', () => {
    epoch++;
  });
  // A standalone client: script calls made in one burst share socket writes (a Cluster client has
  // a socket per node).
  const batch = typeof client.nodes === 'function' ? undefined : new WriteBatch(client);
  return {
    kind: 'ioredis',
    epoch: () => epoch,
    diagnose: () => diagnose(client),
    evalsha: batch
      ? (sha, keys, args) => {
          batch.before();
          return client.evalsha(sha, keys.length, ...keys, ...args);
        }
      : (sha, keys, args) => client.evalsha(sha, keys.length, ...keys, ...args),
    eval: (script, keys, args) => client.eval(script, keys.length, ...keys, ...args),
    command: ([name, ...args], key) => {
      // ioredis routes by the command's own keys; a keyless WAIT would go to a random node of a Cluster.
      const target = key !== undefined && ROUTED_BY_KEY.has((name ?? '').toUpperCase()) && typeof client.nodes === 'function' ? nodeFor(client, key) : undefined;
      return (target ?? client).call(name ?? '', ...args);
    },
    async createSubscriber(onMessage, sharded) {
      // A Cluster routes SSUBSCRIBE to the channel's shard only with `shardedSubscribers` (ioredis ≥ 5.4).
      const sub = sharded && typeof client.nodes === 'function' ? client.duplicate([], { shardedSubscribers: true }) : client.duplicate();
      sub.on('error', () => {
        /* reconnects on its own; holdfast's fallback timers cover the gap */
      });
      sub.on(sharded ? 'smessage' : 'message', ((channel: string, message: string) => onMessage(channel, message)));
      let closed = false;
      const subscriber: RedisSubscriber = {
        subscribe: async (channel: string) => {
          await (sharded ? sub.ssubscribe?.(channel) : sub.subscribe(channel));
        },
        unsubscribe: async (channel) => {
          await (sharded ? sub.sunsubscribe?.(channel) : sub.unsubscribe(channel));
        },
        close: async () => {
          if (closed) return;
          closed = true;
          try {
            await sub.quit();
          } catch {
            sub.disconnect();
          }
        },
      };
      return subscriber;
    },
  };
}

/**
 * The one seam between holdfast and a Redis client. An adapter moves bytes and nothing else: a new primitive
 * never changes an adapter.
 *
 * @module
 */

/** Arguments of a script call: every key in `keys`, everything else in `args`. */
export type ScriptArgs = readonly (string | number)[];

/** A dedicated pub/sub connection. */
export interface RedisSubscriber {
  /** Subscribes to `channel`; resolves once Redis confirmed it. */
  subscribe(channel: string): Promise<void>;
  /** Unsubscribes from `channel`. */
  unsubscribe(channel: string): Promise<void>;
  /** Closes the connection. Idempotent. */
  close(): Promise<void>;
}

/**
 * What holdfast needs from a Redis connection. Implemented by the ioredis and node-redis adapters; implement it
 * yourself to use another client.
 */
export interface RedisTransport {
  /** A short name of the client, for messages. */
  readonly kind: string;
  /** `EVALSHA sha numkeys ...keys ...args`. Rejects with the server's error (NOSCRIPT included) as the client raises it. */
  evalsha(sha: string, keys: readonly string[], args: ScriptArgs): Promise<unknown>;
  /** `EVAL script numkeys ...keys ...args`. */
  eval(script: string, keys: readonly string[], args: ScriptArgs): Promise<unknown>;
  /** Any other command, e.g. `['PTTL', key]`. `key` names the key the command routes by, for clusters. */
  command(args: readonly string[], key?: string): Promise<unknown>;
  /**
   * Opens a dedicated subscriber connection (one per holdfast client) whose messages go to `onMessage`.
   * `sharded` asks for `SSUBSCRIBE` (Redis ≥ 7, cluster).
   */
  createSubscriber(onMessage: (channel: string, message: string) => void, sharded: boolean): Promise<RedisSubscriber>;
}

/** True for an object that already is a {@link RedisTransport}. */
export function isTransport(value: unknown): value is RedisTransport {
  if (typeof value !== 'object' || value === null) return false;
  const v = value as Partial<RedisTransport>;
  return (
    typeof v.kind === 'string' &&
    typeof v.evalsha === 'function' &&
    typeof v.eval === 'function' &&
    typeof v.command === 'function' &&
    typeof v.createSubscriber === 'function'
  );
}

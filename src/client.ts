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
  /**
   * Optional: how many times the connection was lost so far. Implement it for a client that *resends* the commands
   * that were in flight when its connection dropped (ioredis does, by default): a reply that arrives across a change
   * may be the reply to the resent copy, so holdfast reads it the way it reads its own retry (a release that finds
   * the lock gone was the one that freed it).
   */
  epoch?(): number;
  /**
   * Optional: what the client knows of its connection when it is not connected, for the error of a call that got no
   * reply in time: `state` goes into the message ("ioredis reconnecting to 127.0.0.1:6379: connect ECONNREFUSED
   * 127.0.0.1:6379"), `cause` (the last connection error the client saw) becomes its `cause`. `undefined` when
   * connected. Called only after a time-out; must not throw.
   */
  diagnose?(): ConnectionDiagnosis | undefined;
}

/** What {@link RedisTransport.diagnose} tells of a connection that is not connected. */
export interface ConnectionDiagnosis {
  /** Its state and address, in words, e.g. "ioredis reconnecting to 127.0.0.1:6379: connect ECONNREFUSED 127.0.0.1:6379". */
  readonly state: string;
  /** The last connection error the client saw, if any. */
  readonly cause?: Error | undefined;
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

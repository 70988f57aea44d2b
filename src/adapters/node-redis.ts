import type { RedisSubscriber, RedisTransport } from '../client.js';

type Listener = (message: string, channel: string) => void;

/** The part of a node-redis client (`createClient` or `createCluster`) the adapter uses. */
export interface NodeRedisLike {
  /** `EVALSHA`: runs a cached script. */
  evalSha(sha: string, options: { keys: string[]; arguments: string[] }): Promise<unknown>;
  /** `EVAL`: runs a script (after `NOSCRIPT`). */
  eval(script: string, options: { keys: string[]; arguments: string[] }): Promise<unknown>;
  /** Any other command. */
  sendCommand(...args: never[]): Promise<unknown>;
  /** A new client with the same settings: holdfast's one pub/sub connection. */
  duplicate(): NodeRedisLike;
  /** Connects the duplicate. */
  connect?(): Promise<unknown>;
  /** `SUBSCRIBE` (on the duplicate). */
  subscribe(channel: string, listener: (message: string, channel: string) => void): Promise<unknown>;
  /** `UNSUBSCRIBE` (on the duplicate). */
  unsubscribe(channel: string, listener?: (message: string, channel: string) => void): Promise<unknown>;
  /** `SSUBSCRIBE`, with `shardedPubSub`. */
  sSubscribe?(channel: string, listener: (message: string, channel: string) => void): Promise<unknown>;
  /** `SUNSUBSCRIBE`, with `shardedPubSub`. */
  sUnsubscribe?(channel: string, listener?: (message: string, channel: string) => void): Promise<unknown>;
  /** Event listener (`error`, `ready`). */
  on(event: string, listener: (...args: never[]) => void): unknown;
  /** Closes the client (node-redis 5). */
  close?(): Promise<unknown>;
  /** Closes the client (node-redis 4). */
  quit?(): Promise<unknown>;
  /** Closes the client at once. */
  destroy?(): void;
  /** Whether the client is connected. */
  isOpen?: boolean;
  /** Present on a cluster client. */
  masters?: unknown;
  /** Present on a Sentinel client (`createSentinel`). */
  getMasterNode?: unknown;
}

/** True when `value` looks like a node-redis client. */
export function isNodeRedis(value: unknown): value is NodeRedisLike {
  const v = value as Partial<NodeRedisLike> | null;
  return typeof v === 'object' && v !== null && typeof v.evalSha === 'function' && typeof v.sendCommand === 'function';
}

const strings = (values: readonly (string | number)[]): string[] => values.map(String);

/**
 * Wraps a node-redis client (`createClient()`, `createCluster()` or `createSentinel()`, already connected) as a
 * {@link RedisTransport}. The client stays yours: holdfast never closes it.
 */
export function nodeRedisTransport(client: NodeRedisLike): RedisTransport {
  // The three clients differ only in `sendCommand`'s signature (node-redis 5/6):
  //   client (args) · cluster (firstKey, isReadonly, args): routed to the key's master · sentinel (isReadonly, args)
  const send: (args: string[], key: string | undefined) => Promise<unknown> =
    client.masters !== undefined
      ? (args, key) => (client.sendCommand as (k: string | undefined, ro: boolean, a: string[]) => Promise<unknown>)(key, false, args)
      : typeof client.getMasterNode === 'function'
        ? (args) => (client.sendCommand as (ro: boolean, a: string[]) => Promise<unknown>)(false, args)
        : (args) => (client.sendCommand as (a: string[]) => Promise<unknown>)(args);
  return {
    kind: 'node-redis',
    evalsha: (sha, keys, args) => client.evalSha(sha, { keys: [...keys], arguments: strings(args) }),
    eval: (script, keys, args) => client.eval(script, { keys: [...keys], arguments: strings(args) }),
    command: (args, key) => send([...args], key),
    async createSubscriber(onMessage, sharded) {
      const sub = client.duplicate();
      sub.on('error', () => {
        /* reconnects on its own; holdfast's fallback timers cover the gap */
      });
      if (sub.connect && sub.isOpen !== true) await sub.connect();
      const listener: Listener = (message, channel) => onMessage(channel, message);
      let closed = false;
      const subscriber: RedisSubscriber = {
        subscribe: async (channel) => {
          await (sharded && sub.sSubscribe ? sub.sSubscribe(channel, listener) : sub.subscribe(channel, listener));
        },
        unsubscribe: async (channel) => {
          await (sharded && sub.sUnsubscribe ? sub.sUnsubscribe(channel, listener) : sub.unsubscribe(channel, listener));
        },
        close: async () => {
          if (closed) return;
          closed = true;
          try {
            await (sub.close ? sub.close() : sub.quit?.());
          } catch {
            sub.destroy?.();
          }
        },
      };
      return subscriber;
    },
  };
}

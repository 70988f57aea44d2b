import type { RedisSubscriber, RedisTransport } from '../client.js';

/** The part of an ioredis `Redis` or `Cluster` the adapter uses (structural: holdfast never imports ioredis). */
export interface IoredisLike {
  evalsha(sha: string, numKeys: number, ...rest: (string | number)[]): Promise<unknown>;
  eval(script: string, numKeys: number, ...rest: (string | number)[]): Promise<unknown>;
  call(command: string, ...args: string[]): Promise<unknown>;
  duplicate(): IoredisLike;
  subscribe(...channels: string[]): Promise<unknown>;
  unsubscribe(...channels: string[]): Promise<unknown>;
  ssubscribe?(...channels: string[]): Promise<unknown>;
  sunsubscribe?(...channels: string[]): Promise<unknown>;
  on(event: string, listener: (...args: never[]) => void): unknown;
  quit(): Promise<unknown>;
  disconnect(): void;
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
  return {
    kind: 'ioredis',
    evalsha: (sha, keys, args) => client.evalsha(sha, keys.length, ...keys, ...args),
    eval: (script, keys, args) => client.eval(script, keys.length, ...keys, ...args),
    command: ([name, ...args]) => client.call(name ?? '', ...args),
    async createSubscriber(onMessage, sharded) {
      const sub = client.duplicate();
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

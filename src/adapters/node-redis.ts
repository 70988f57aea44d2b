import type { RedisSubscriber, RedisTransport, ScriptArgs } from '../client.js';

type Listener = (message: string, channel: string) => void;

/** The part of a node-redis client (`createClient` or `createCluster`) the adapter uses. */
export interface NodeRedisLike {
  /** `EVALSHA`: only looked for, to tell a node-redis client (holdfast sends its scripts with `sendCommand`). */
  evalSha(sha: string, options: { keys: string[]; arguments: string[] }): Promise<unknown>;
  /** Every command holdfast sends, scripts included. */
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
  on(event: string, listener: (...args: unknown[]) => void): unknown;
  /** Closes the client (node-redis 5). */
  close?(): Promise<unknown>;
  /** Closes the client (node-redis 4). */
  quit?(): Promise<unknown>;
  /** Closes the client at once. */
  destroy?(): void;
  /** Whether the client was connected (and not closed since). */
  isOpen?: boolean;
  /** Whether the client is connected now (false while it reconnects). */
  isReady?: boolean;
  /** The client's options: their `url` is named (without its password) in the error of a call without reply. */
  options?:
    | {
        /** The URL the client connects to. */
        url?: string | undefined;
      }
    | undefined;
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

/**
 * The command options holdfast sends every command with. node-redis ≥ 5 arms a timer of its own for every command (an
 * `AbortSignal.timeout` and its listeners, 5 s by default, for the time until the command is written): on a hot path
 * that costs more than the rest of the client's work for the command. holdfast bounds every call with its own time-out
 * (`commandTimeout`, one shared ticker for all calls), so its commands go without node-redis' timer. A command that
 * holdfast gave up on while the connection was down may then still be sent once it is back, as with ioredis' offline
 * queue: every script holdfast runs is safe to run late (a lock it takes always has its lease, and an acquisition
 * whose reply was lost is released right behind it).
 */
const COMMAND_OPTIONS = Object.freeze({ timeout: 0 });

/**
 * A command on a client that is not open: node-redis would say "The client is closed", and a client from
 * `createClient()` starts closed until `connect()`.
 */
function notOpen(): Promise<never> {
  return Promise.reject(new Error('the node-redis client is not open: call `await client.connect()` before holdfast uses it (and close holdfast before you close the client)'));
}

/** `redis://user:secret@host` → `redis://user:***@host`. */
function redactUrl(url: string): string {
  try {
    const u = new URL(url);
    if (u.password) u.password = '***';
    return u.toString().replace(/\/$/, '');
  } catch {
    return url.replace(/\/\/([^:@/]*):[^@/]*@/, '//$1:***@');
  }
}

/** `[name, sha or source, numkeys, ...keys, ...args]` as the strings node-redis sends. */
function scriptCommand(name: 'EVALSHA' | 'EVAL', body: string, keys: readonly string[], args: ScriptArgs): string[] {
  const nk = keys.length;
  const out = new Array<string>(3 + nk + args.length);
  out[0] = name;
  out[1] = body;
  out[2] = String(nk);
  for (let i = 0; i < nk; i++) out[3 + i] = keys[i] as string;
  for (let i = 0; i < args.length; i++) out[3 + nk + i] = String(args[i]);
  return out;
}

/**
 * Wraps a node-redis client (`createClient()`, `createCluster()` or `createSentinel()`, already connected) as a
 * {@link RedisTransport}. The client stays yours: holdfast never closes it. Scripts are sent as plain `EVALSHA`
 * commands (holdfast handles `NOSCRIPT` itself), without node-redis' own per-command timer (see `COMMAND_OPTIONS`).
 */
export function nodeRedisTransport(client: NodeRedisLike): RedisTransport {
  // The three clients differ only in `sendCommand`'s signature (node-redis 5/6):
  //   client (args) · cluster (firstKey, isReadonly, args): routed to the key's master · sentinel (isReadonly, args)
  type Send = (...a: unknown[]) => Promise<unknown>;
  const sendCommand = client.sendCommand.bind(client) as Send;
  const send: (args: string[], key: string | undefined) => Promise<unknown> =
    client.masters !== undefined
      ? (args, key) => sendCommand(key, false, args, COMMAND_OPTIONS)
      : typeof client.getMasterNode === 'function'
        ? (args) => sendCommand(false, args, COMMAND_OPTIONS)
        : (args) => sendCommand(args, COMMAND_OPTIONS);
  return {
    kind: 'node-redis',
    evalsha: (sha, keys, args) => (client.isOpen === false ? notOpen() : send(scriptCommand('EVALSHA', sha, keys, args), keys[0])),
    eval: (script, keys, args) => (client.isOpen === false ? notOpen() : send(scriptCommand('EVAL', script, keys, args), keys[0])),
    command: (args, key) => (client.isOpen === false ? notOpen() : send([...args], key)),
    diagnose: () => {
      if (client.isReady !== false) return undefined;
      const url = client.options?.url;
      return { state: `node-redis client not ready${url ? `, reconnecting to ${redactUrl(url)}` : ''}` };
    },
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

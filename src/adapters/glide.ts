import type { RedisSubscriber, RedisTransport } from '../client.js';

/** A message as GLIDE hands it to a subscription callback (`GlideString`s: strings with the default decoder). */
interface GlidePubSubMsg {
  channel: unknown;
  message: unknown;
}

/** A route of `GlideClusterClient.customCommand`: the primary of the slot of `key`. */
interface SlotKeyRoute {
  type: 'primarySlotKey';
  key: string;
}

/** `GlideClusterClient.customCommand` with a route. */
type RoutedCommand = (args: string[], options: { route: SlotKeyRoute }) => Promise<unknown>;

/**
 * The part of a Valkey GLIDE `GlideClient` or `GlideClusterClient` (`@valkey/valkey-glide` ≥ 2) the adapter uses
 * (structural: holdfast never imports GLIDE).
 */
export interface GlideLike {
  /** Sends any command (scripts go as `EVALSHA` / `EVAL`). On a `GlideClusterClient` it also takes `{ route }`. */
  customCommand(args: string[]): Promise<unknown>;
  /** Not called: with `customCommand` and `subscribe`, it tells a GLIDE client from other clients. */
  invokeScript(script: unknown, options?: unknown): Promise<unknown>;
  /** Subscribes, waiting up to `timeoutMs` for the server's confirmation (GLIDE ≥ 2). */
  subscribe(channels: Iterable<string>, timeoutMs: number): Promise<void>;
  /** Unsubscribes from `channels` (`null`: from every channel). */
  unsubscribe(channels: Iterable<string> | null, timeoutMs: number): Promise<void>;
  /** Sharded subscribe; present on a `GlideClusterClient`. */
  ssubscribe?(channels: Iterable<string>, timeoutMs: number): Promise<void>;
  /** Sharded unsubscribe; present on a `GlideClusterClient`. */
  sunsubscribe?(channels: Iterable<string> | null, timeoutMs: number): Promise<void>;
  /** Closes the client (holdfast calls it on its own subscriber client only). */
  close(errorMessage?: string): void;
}

/** The configuration a GLIDE client is created from (`GlideClientConfiguration` / `GlideClusterClientConfiguration`). */
export type GlideConfig = Record<string, unknown>;

/** Options of {@link glideTransport}. */
export interface GlideTransportOptions {
  /**
   * The configuration the subscriber client is created from. GLIDE has no `duplicate()` and takes the pub/sub
   * callback only at creation, so holdfast creates its one subscriber client from this configuration, with its own
   * callback (and RESP3, which GLIDE's pub/sub needs). Give it when your client's configuration cannot be read back
   * (holdfast reads the one GLIDE keeps on the client). Unless it sets
   * `advancedConfiguration.pubsubReconciliationIntervalMs`, the subscriber restores lost subscriptions every 250 ms
   * (GLIDE's default: 3 s), so that wake-ups resume soon after a Cluster slot migrated or a connection came back.
   * @default the configuration `client` was created with
   */
  subscriberConfig?: GlideConfig;
}

/** True when `value` looks like a Valkey GLIDE client (`GlideClient` or `GlideClusterClient`). */
export function isGlide(value: unknown): value is GlideLike {
  const v = value as Partial<GlideLike> | null;
  return (
    typeof v === 'object' &&
    v !== null &&
    typeof v.customCommand === 'function' &&
    typeof v.invokeScript === 'function' &&
    typeof v.subscribe === 'function' &&
    typeof (v.constructor as { createClient?: unknown } | undefined)?.createClient === 'function'
  );
}

/**
 * GLIDE's core (redis-rs) rewrites a server's error reply: `NOSCRIPT No matching script` arrives as
 * `An error was signalled by the server: - NoScriptError: No matching script`, `HOLDFAST_X detail` as
 * `HOLDFAST_X: detail`. These are the kinds whose code it drops; the rest keep theirs.
 */
const CODE_OF_KIND: Record<string, string> = {
  ResponseError: 'ERR',
  NoScriptError: 'NOSCRIPT',
  ExecAbortError: 'EXECABORT',
  BusyLoadingError: 'LOADING',
  ReadOnly: 'READONLY',
  MasterDown: 'MASTERDOWN',
  ClusterDown: 'CLUSTERDOWN',
  CrossSlot: 'CROSSSLOT',
  TryAgain: 'TRYAGAIN',
  Moved: 'MOVED',
  Ask: 'ASK',
  NoSub: 'NOSUB',
  NotBusy: 'NOTBUSY',
};
const SERVER_KIND = /^An error was signalled by the server: - (\w+): ([\s\S]*)$/;
const SERVER_CODE = /^([A-Z][A-Z0-9_]*): ([\s\S]*)$/;

/** A server's error reply, as the other clients raise it (`name` `ReplyError`, the message starting with its code). */
class GlideReplyError extends Error {
  override get name(): string {
    return 'ReplyError';
  }
}

/**
 * GLIDE raises a server's error reply as a bare `RequestError` and connection trouble as its subclasses
 * (`TimeoutError`, `ConnectionError`, …) or `ClosingError`: the first becomes a reply error with the server's own
 * text (so `NOSCRIPT` takes the EVAL path, a script bug becomes a `ScriptError`), the rest go on as they are (a
 * `RedisConnectionError` to the caller).
 */
function toReplyError(error: unknown): unknown {
  if (!(error instanceof Error) || error.constructor.name !== 'RequestError') return error;
  const kind = SERVER_KIND.exec(error.message);
  if (kind) return new GlideReplyError(`${CODE_OF_KIND[kind[1]!] ?? kind[1]!} ${kind[2]!}`, { cause: error });
  const code = SERVER_CODE.exec(error.message);
  if (code) return new GlideReplyError(`${code[1]!} ${code[2]!}`, { cause: error });
  return error;
}

/**
 * GLIDE returns a RESP3 map (`CONFIG GET`, `HGETALL`) as an array of `{ key, value }` records; the other clients'
 * RESP2 shape is the flat `[key, value, …]` array.
 */
function flattenRecords(reply: unknown): unknown {
  if (!Array.isArray(reply) || reply.length === 0) return reply;
  const records = reply.every((e) => typeof e === 'object' && e !== null && !Array.isArray(e) && !Buffer.isBuffer(e) && 'key' in e && 'value' in e);
  return records ? (reply as { key: unknown; value: unknown }[]).flatMap((r) => [r.key, r.value]) : reply;
}

/** Commands without a key that must still run on the node (and connection) of a given key: `WAIT` after a write. */
const ROUTED_BY_KEY = new Set(['WAIT', 'WAITAOF']);

/** How long GLIDE may take to confirm a (un)subscription; holdfast's `commandTimeout` bounds the wait for it first. */
const SUBSCRIBE_TIMEOUT_MS = 30_000;
/** How long closing the subscriber waits for its unsubscriptions before it closes anyway. */
const CLOSE_TIMEOUT_MS = 1000;
/**
 * How often the subscriber client compares its subscriptions with the server's and restores the missing ones
 * (GLIDE's `advancedConfiguration.pubsubReconciliationIntervalMs`, 3 s by default). A Redis Cluster slot that
 * migrated drops its sharded subscriptions on the old node, and wake-ups published before they are restored are
 * lost: the waiters then sleep until the holder's lease runs out.
 */
const SUBSCRIBER_RECONCILE_MS = 250;

const strings = (values: readonly (string | number)[]): string[] => values.map(String);

/**
 * Wraps a Valkey GLIDE `GlideClient` or `GlideClusterClient` (`@valkey/valkey-glide` ≥ 2) as a {@link RedisTransport}.
 * The client stays yours: holdfast never closes it. For pub/sub holdfast creates one subscriber client from your
 * client's configuration (see {@link GlideTransportOptions.subscriberConfig}).
 *
 * Mind GLIDE's `requestTimeout` (250 ms unless you set it): it bounds every command, `WAIT` of `replicaSync`
 * included, before holdfast's `commandTimeout` does; set it at least as long as the longest wait you ask for.
 */
export function glideTransport(client: GlideLike, options: GlideTransportOptions = {}): RedisTransport {
  const cluster = typeof client.ssubscribe === 'function';
  const send = (args: string[], route?: SlotKeyRoute): Promise<unknown> => {
    let reply: Promise<unknown>;
    try {
      reply = route ? (client.customCommand as RoutedCommand).call(client, args, { route }) : client.customCommand(args);
    } catch (error) {
      return Promise.reject(error); // a closed client throws at once: still a rejection, as from the others
    }
    return reply.then(flattenRecords, (error: unknown) => {
      throw toReplyError(error);
    });
  };
  return {
    kind: 'glide',
    // EVALSHA / EVAL as plain commands (not GLIDE's `Script`, which hides NOSCRIPT): holdfast's one script path
    // (src/script.ts) stays the same for every client. GLIDE routes both by their first key on a cluster.
    evalsha: (sha, keys, args) => send(['EVALSHA', sha, String(keys.length), ...keys, ...strings(args)]),
    eval: (script, keys, args) => send(['EVAL', script, String(keys.length), ...keys, ...strings(args)]),
    command: (args, key) => {
      const name = (args[0] ?? '').toUpperCase();
      // a keyless WAIT would go to a random node of a cluster: send it to the primary that ran the key's script
      const route = cluster && key !== undefined && ROUTED_BY_KEY.has(name) ? { type: 'primarySlotKey' as const, key } : undefined;
      return send([...args], route);
    },
    async createSubscriber(onMessage, sharded) {
      const config = options.subscriberConfig ?? (client as unknown as { config?: GlideConfig }).config;
      const create = (client.constructor as { createClient?: (config: GlideConfig) => Promise<GlideLike> }).createClient;
      if (!config || !create) {
        throw new TypeError('holdfast cannot read this GLIDE client\'s configuration: pass glideTransport(client, { subscriberConfig })');
      }
      const { protocol: _protocol, pubsubSubscriptions: _subscriptions, lazyConnect: _lazy, advancedConfiguration, ...rest } = config;
      const sub = await create.call(client.constructor, {
        ...rest,
        advancedConfiguration: { pubsubReconciliationIntervalMs: SUBSCRIBER_RECONCILE_MS, ...(advancedConfiguration as GlideConfig | undefined) },
        pubsubSubscriptions: {
          channelsAndPatterns: {},
          callback: (msg: GlidePubSubMsg) => onMessage(String(msg.channel), String(msg.message)),
        },
      });
      const useSharded = sharded && typeof sub.ssubscribe === 'function';
      let closed = false;
      const subscriber: RedisSubscriber = {
        subscribe: async (channel) => {
          await (useSharded ? sub.ssubscribe!([channel], SUBSCRIBE_TIMEOUT_MS) : sub.subscribe([channel], SUBSCRIBE_TIMEOUT_MS)).catch((error: unknown) => {
            throw toReplyError(error);
          });
        },
        unsubscribe: async (channel) => {
          await (useSharded ? sub.sunsubscribe!([channel], SUBSCRIBE_TIMEOUT_MS) : sub.unsubscribe([channel], SUBSCRIBE_TIMEOUT_MS)).catch((error: unknown) => {
            throw toReplyError(error);
          });
        },
        close: async () => {
          if (closed) return;
          closed = true;
          // drop every subscription first: GLIDE keeps re-subscribing what it was asked for, even as it closes
          await Promise.allSettled([sub.unsubscribe(null, CLOSE_TIMEOUT_MS), sub.sunsubscribe?.(null, CLOSE_TIMEOUT_MS)]);
          sub.close();
        },
      };
      return subscriber;
    },
  };
}

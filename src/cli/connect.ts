/**
 * The CLI's Redis connection. The library never depends on a Redis client: the command loads one at run
 * time, `ioredis` first, then `redis` (node-redis), then `@valkey/valkey-glide`, whichever is installed next to
 * holdfast, and says how to get one when none is.
 *
 * @module
 */
import {
  glideTransport,
  ioredisTransport,
  nodeRedisTransport,
  type GlideLike,
  type IoredisLike,
  type NodeRedisLike,
  type RedisTransport,
} from '../index.js';
import { CliError, EXIT, UsageError } from './common.js';

/** An open connection: the transport holdfast runs over, and how to close it. */
export interface Connection {
  /** The URL with any password replaced by `***`, for messages. */
  readonly where: string;
  readonly transport: RedisTransport;
  /** The raw client (handed to `new Holdfast({ redis })`). */
  readonly client: unknown;
  close(): Promise<void>;
}

/** How to connect. */
export interface ConnectOptions {
  /** `--url`; else `$REDIS_URL`; else `redis://127.0.0.1:6379`. */
  url?: string | undefined;
  /** ms to wait for the first connection. */
  connectTimeout: number;
  /** Environment to read `REDIS_URL` / `REDISCLI_AUTH` / `HOLDFAST_PASSWORD` from. */
  env?: NodeJS.ProcessEnv;
}

/** The default when neither `--url` nor `$REDIS_URL` is given. */
export const DEFAULT_URL = 'redis://127.0.0.1:6379';

/** `redis://user:secret@host` → `redis://user:***@host`. */
export function redact(url: string): string {
  try {
    const u = new URL(url);
    if (u.password) u.password = '***';
    return u.toString().replace(/\/$/, '');
  } catch {
    return url.replace(/\/\/([^:@/]*):[^@/]*@/, '//$1:***@');
  }
}

/** The URL to use, and the password from the environment when the URL has none. */
export function resolveUrl(opts: Pick<ConnectOptions, 'url' | 'env'>): { url: string; password: string | undefined } {
  const env = opts.env ?? process.env;
  const url = opts.url ?? (env.REDIS_URL || DEFAULT_URL);
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw new UsageError(`not a Redis URL: "${redact(url)}" (expected redis://host:port or rediss://…)`);
  }
  if (parsed.protocol !== 'redis:' && parsed.protocol !== 'rediss:') {
    throw new UsageError(`not a Redis URL: "${redact(url)}" (the scheme must be redis:// or rediss://)`);
  }
  const password = parsed.password ? undefined : env.REDISCLI_AUTH || env.HOLDFAST_PASSWORD || undefined;
  return { url, password };
}

const NO_CLIENT =
  'no Redis client found: install one next to holdfast (`npm install ioredis`, `npm install redis` or `npm install @valkey/valkey-glide`), ' +
  'or run it with `npx -p holdfast -p ioredis holdfast …`';

async function load(name: string): Promise<Record<string, unknown> | undefined> {
  try {
    return (await import(name)) as Record<string, unknown>;
  } catch (error) {
    if ((error as { code?: string }).code === 'ERR_MODULE_NOT_FOUND' || (error as { code?: string }).code === 'MODULE_NOT_FOUND') return undefined;
    throw error;
  }
}

/**
 * Connects, failing within `connectTimeout` with a one-line {@link CliError} (exit 69) when Redis is unreachable
 * or refuses the credentials. After the first connection the client reconnects on its own (an `exec` outlives blips;
 * holdfast's lease bounds how long a blip may last).
 */
export async function connect(opts: ConnectOptions): Promise<Connection> {
  const { url, password } = resolveUrl(opts);
  const where = redact(url);
  const ioredis = await load('ioredis');
  if (ioredis) return connectIoredis(ioredis, url, password, where, opts.connectTimeout);
  const nodeRedis = await load('redis');
  if (nodeRedis) return connectNodeRedis(nodeRedis, url, password, where, opts.connectTimeout);
  const glide = await load('@valkey/valkey-glide');
  if (glide) return connectGlide(glide, url, password, where, opts.connectTimeout);
  throw new CliError(NO_CLIENT, EXIT.REDIS_UNAVAILABLE);
}

function unreachable(where: string, detail: string, cause?: unknown): CliError {
  return new CliError(`cannot reach Redis at ${where}: ${detail}`, EXIT.REDIS_UNAVAILABLE, { cause });
}

function messageOf(error: unknown): string {
  if (error instanceof AggregateError && error.errors.length > 0) return messageOf(error.errors[0]);
  return error instanceof Error ? error.message || (error as { code?: string }).code || error.name : String(error);
}

type IoredisCtor = new (url: string, options: Record<string, unknown>) => IoredisLike & {
  connect(): Promise<void>;
  disconnect(): void;
  quit(): Promise<unknown>;
  options: { retryStrategy?: unknown };
};

async function connectIoredis(mod: Record<string, unknown>, url: string, password: string | undefined, where: string, timeout: number): Promise<Connection> {
  const Redis = (mod.Redis ?? mod.default) as IoredisCtor;
  let lastError: unknown;
  const client = new Redis(url, {
    lazyConnect: true,
    connectTimeout: timeout,
    maxRetriesPerRequest: 1,
    // no retries until the first connection succeeded: fail fast instead
    retryStrategy: () => null,
    ...(password === undefined ? {} : { password }),
  });
  client.on('error', (error: unknown) => {
    lastError = error;
  });
  const timer = new Promise<never>((_, reject) => {
    setTimeout(() => reject(new Error(`no connection within ${timeout} ms`)), timeout + 100).unref();
  });
  try {
    await Promise.race([client.connect(), timer]);
    await Promise.race([client.call('PING'), timer]);
  } catch (error) {
    client.disconnect();
    throw unreachable(where, messageOf(lastError ?? error), lastError ?? error);
  }
  client.options.retryStrategy = (attempt: number) => Math.min(attempt * 100, 1000);
  return {
    where,
    client,
    transport: ioredisTransport(client),
    close: async () => {
      try {
        await Promise.race([client.quit(), new Promise((r) => setTimeout(r, 500).unref())]);
      } catch {
        /* already gone */
      }
      client.disconnect();
    },
  };
}

type NodeRedisClient = NodeRedisLike & { connect(): Promise<unknown>; destroy(): void; on(e: string, l: (...a: never[]) => void): unknown };

async function connectNodeRedis(mod: Record<string, unknown>, url: string, password: string | undefined, where: string, timeout: number): Promise<Connection> {
  const createClient = mod.createClient as (options: Record<string, unknown>) => NodeRedisClient;
  let connected = false;
  let lastError: unknown;
  const client = createClient({
    url,
    ...(password === undefined ? {} : { password }),
    socket: {
      connectTimeout: timeout,
      reconnectStrategy: (attempt: number) => (connected ? Math.min(attempt * 100, 1000) : false),
    },
  });
  client.on('error', (error: unknown) => {
    lastError = error;
  });
  const timer = new Promise<never>((_, reject) => {
    setTimeout(() => reject(new Error(`no connection within ${timeout} ms`)), timeout + 100).unref();
  });
  try {
    await Promise.race([client.connect(), timer]);
    connected = true;
  } catch (error) {
    try {
      client.destroy();
    } catch {
      /* never opened */
    }
    throw unreachable(where, messageOf(lastError ?? error), lastError ?? error);
  }
  return {
    where,
    client,
    transport: nodeRedisTransport(client),
    close: async () => {
      try {
        client.destroy();
      } catch {
        /* already closed */
      }
    },
  };
}

type GlideClientCtor = { createClient(config: Record<string, unknown>): Promise<GlideLike> };
type GlideLogger = { setLoggerConfig?(level: string): void };

async function connectGlide(mod: Record<string, unknown>, url: string, password: string | undefined, where: string, timeout: number): Promise<Connection> {
  const GlideClient = mod.GlideClient as GlideClientCtor;
  // GLIDE's core logs every error reply and connection attempt to stdout: the command's own output stays clean
  (mod.Logger as GlideLogger | undefined)?.setLoggerConfig?.('off');
  const u = new URL(url);
  const username = decodeURIComponent(u.username) || undefined;
  const secret = u.password ? decodeURIComponent(u.password) : password;
  const db = Number(u.pathname.slice(1) || 0);
  let client: GlideLike;
  try {
    client = await GlideClient.createClient({
      addresses: [{ host: u.hostname, port: Number(u.port || 6379) }],
      useTLS: u.protocol === 'rediss:',
      ...(secret === undefined ? {} : { credentials: { password: secret, ...(username === undefined ? {} : { username }) } }),
      ...(db > 0 ? { databaseId: db } : {}),
      // GLIDE's own per-command limit (250 ms by default) must not cut holdfast's waits short
      requestTimeout: Math.max(timeout, 10_000),
      advancedConfiguration: { connectionTimeout: timeout },
    });
  } catch (error) {
    throw unreachable(where, messageOf(error).replace(/\s+/g, ' ').trim(), error);
  }
  return {
    where,
    client,
    transport: glideTransport(client),
    close: async () => {
      try {
        client.close();
      } catch {
        /* already closed */
      }
    },
  };
}

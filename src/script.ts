/**
 * The only path by which holdfast runs Lua: EVALSHA, and on NOSCRIPT (a `SCRIPT FLUSH`, a restarted or new server)
 * EVAL, which also loads the script again. Every call is bounded by a timeout, and client errors become typed
 * holdfast errors here and nowhere else.
 *
 * @module
 */
import type { RedisTransport, ScriptArgs } from './client.js';
import { RedisConnectionError, ScriptError } from './errors.js';

/** One Lua script: its source, its SHA1 and how many of its arguments are keys. */
export interface ScriptDef {
  readonly name: string;
  /** How many keys the script takes; -1 for a variadic script (`<op>-n.lua`, e.g. one key per segment). */
  readonly numKeys: number;
  readonly sha: string;
  readonly source: string;
}

/** Redis replies that mean "not now, try elsewhere or later": treated as connection trouble, not script bugs. */
const TRANSIENT = /^(READONLY|LOADING|MASTERDOWN|CLUSTERDOWN|TRYAGAIN|MOVED|ASK|BUSY|NOREPLICAS)\b/;
const REPLY_ERROR_NAMES = new Set(['ReplyError', 'ErrorReply', 'SimpleError', 'BlobError']);

function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

function isReplyError(error: unknown): boolean {
  return error instanceof Error && (REPLY_ERROR_NAMES.has(error.name) || REPLY_ERROR_NAMES.has(error.constructor.name));
}

/** Maps anything a client threw to a holdfast error. */
export function toHoldfastError(error: unknown, what: string): Error {
  const message = messageOf(error);
  if (isReplyError(error) && !TRANSIENT.test(message)) {
    return new ScriptError(`${what}: Redis replied with an error: ${message}`, { cause: error });
  }
  return new RedisConnectionError(`${what}: ${message}`, { cause: error });
}

interface Pending {
  deadline: number;
  fail: () => void;
}

/**
 * Command time-outs share one unref'd ticker instead of a timer per command (a timer costs more than a Redis
 * round trip's worth of JS on a busy hot path). The ticker runs only while commands are in flight.
 */
const pending = new Set<Pending>();
let ticker: NodeJS.Timeout | undefined;
let tickMs = 25;

function tick(): void {
  const at = performance.now();
  for (const p of pending) if (at >= p.deadline) p.fail();
  if (pending.size === 0 && ticker) {
    clearInterval(ticker);
    ticker = undefined;
  }
}

/**
 * Races `promise` against `ms` (checked every `min(25, ms / 4)` ms by a shared unref'd ticker: it never keeps the
 * process alive). On time-out rejects with a {@link RedisConnectionError}; the command may still run on the server.
 */
export function withTimeout<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    const entry: Pending = {
      deadline: performance.now() + ms,
      fail: () => {
        pending.delete(entry);
        reject(new RedisConnectionError(`${what}: no reply from Redis within ${ms} ms`));
      },
    };
    pending.add(entry);
    const wanted = Math.max(1, Math.min(25, Math.floor(ms / 4)));
    if (!ticker || wanted < tickMs) {
      if (ticker) clearInterval(ticker);
      tickMs = ticker ? Math.min(tickMs, wanted) : wanted;
      ticker = setInterval(tick, tickMs);
      ticker.unref();
    }
    promise.then(
      (value) => {
        pending.delete(entry);
        resolve(value);
      },
      (error: unknown) => {
        pending.delete(entry);
        reject(error);
      },
    );
  });
}

/** Runs a script: EVALSHA, then EVAL on NOSCRIPT. Rejects with a holdfast error only. */
export async function runScript(
  transport: RedisTransport,
  script: ScriptDef,
  keys: readonly string[],
  args: ScriptArgs,
  timeoutMs: number,
): Promise<unknown> {
  if (script.numKeys >= 0 && keys.length !== script.numKeys) throw new Error(`internal: ${script.name} takes ${script.numKeys} keys, got ${keys.length}`);
  const what = `script ${script.name}`;
  const started = performance.now();
  try {
    return await withTimeout(transport.evalsha(script.sha, keys, args), timeoutMs, what);
  } catch (error) {
    if (!messageOf(error).startsWith('NOSCRIPT')) throw toHoldfastError(error, what);
  }
  const left = Math.max(1, Math.round(timeoutMs - (performance.now() - started)));
  try {
    return await withTimeout(transport.eval(script.source, keys, args), left, what);
  } catch (error) {
    throw toHoldfastError(error, what);
  }
}

/** Runs one plain command with the same timeout and error mapping as scripts. */
export async function runCommand(transport: RedisTransport, args: readonly string[], key: string | undefined, timeoutMs: number): Promise<unknown> {
  const what = `command ${args[0] ?? ''}`;
  try {
    return await withTimeout(transport.command(args, key), timeoutMs, what);
  } catch (error) {
    throw toHoldfastError(error, what);
  }
}

/**
 * The only path by which holdfast runs Lua: EVALSHA, and on NOSCRIPT (a `SCRIPT FLUSH`, a restarted or new server)
 * EVAL, which also loads the script again. Every call is bounded by a timeout, and client errors become typed
 * holdfast errors here and nowhere else.
 *
 * @module
 */
import type { RedisTransport, ScriptArgs } from './client.js';
import { HoldfastError, RedisConnectionError, ScriptError } from './errors.js';
import { LiveSet, liveSlot, type Slotted } from './internal/live-set.js';
import { pauseAfter, SCRIPT_BACKOFF } from './internal/backoff.js';
import { sleep } from './internal/sleep.js';

/** One Lua script: its source, its SHA1 and how many of its arguments are keys. */
export interface ScriptDef<A extends ScriptArgs = ScriptArgs, R = unknown> {
  readonly name: string;
  /** How many keys the script takes; -1 for a variadic script (`<op>-n.lua`, e.g. one key per segment). */
  readonly numKeys: number;
  readonly sha: string;
  readonly source: string;
  /** The script includes `notify`: the publish command (`publish` / `spublish`) goes after its own ARGV. */
  readonly publishes?: boolean;
  /** Types only, never set: the script's arguments and its reply (its header's `@args` and `@reply`, see scripts/gen-lua.ts). */
  readonly types?: { readonly args: A; readonly reply: R };
}

/** The reply of script `S`, as its header's `@reply` types it: `ReplyOf<(typeof scripts)['lock/acquire']>`. */
export type ReplyOf<S extends ScriptDef> = NonNullable<S['types']>['reply'];

/** Redis replies that mean "not now, try elsewhere or later": treated as connection trouble, not script bugs. */
const TRANSIENT = /^(READONLY|LOADING|MASTERDOWN|CLUSTERDOWN|TRYAGAIN|MOVED|ASK|BUSY|NOREPLICAS)\b/;
/**
 * Cluster replies that guarantee the script did not run: a slot being migrated (`TRYAGAIN`: some of the keys already
 * moved; `MOVED`/`ASK` that the client did not follow itself, or ioredis giving up after `maxRedirections` of them).
 * Retried within the call's timeout.
 */
const NOT_RUN = /^(TRYAGAIN|MOVED|ASK)\b|^Too many Cluster redirections\. Last error: \w+: (TRYAGAIN|MOVED|ASK)\b/;
/**
 * The server does not have the script: EVAL it. ioredis reports a `NOSCRIPT` that ends its redirections (the node an
 * `ASK` led to never ran the script) inside its "Too many Cluster redirections" error.
 */
const NO_SCRIPT = /^(Too many Cluster redirections\. Last error: \w+: )?NOSCRIPT\b/;
const REPLY_ERROR_NAMES = new Set(['ReplyError', 'ErrorReply', 'SimpleError', 'BlobError']);

/** The errors {@link runScript} rejected with that guarantee the script did not run (see {@link didNotRun}). */
const notRun = new WeakSet<object>();

/**
 * True when `error`, from {@link runScript}, guarantees that the script did not run: the keys' slot is being migrated
 * in a Redis Cluster and the server kept answering `TRYAGAIN` (or a redirection the client did not follow) until too
 * little of the call's timeout was left for another try. While a slot migrates, a script whose keys are not all on one node is refused until
 * the migration ends, however long it takes. Such an error is a {@link RedisConnectionError}, but nothing needs
 * undoing, and a waiting acquisition may simply try again.
 */
export function didNotRun(error: unknown): boolean {
  return typeof error === 'object' && error !== null && notRun.has(error);
}

/** True when a script call that rejected with `error` may still have run (its reply was lost or came too late). */
export function mayHaveRun(error: unknown): boolean {
  return error instanceof RedisConnectionError && !notRun.has(error);
}

function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

function isReplyError(error: unknown): boolean {
  return error instanceof Error && (REPLY_ERROR_NAMES.has(error.name) || REPLY_ERROR_NAMES.has(error.constructor.name));
}

/** Maps anything a client threw to a holdfast error (one of holdfast's own goes on as it is). */
export function toHoldfastError(error: unknown, what: string): Error {
  if (error instanceof HoldfastError) return error;
  const message = messageOf(error);
  if (isReplyError(error) && !TRANSIENT.test(message)) {
    return new ScriptError(`${what}: Redis replied with an error: ${message}`, { cause: error });
  }
  return new RedisConnectionError(`${what}: ${message}`, { cause: error });
}

/** What a call that got no reply in time can tell of its connection (a Redis transport, or a store). */
export interface Diagnosable {
  /** What the client knows of a connection that is not connected (see `RedisTransport.diagnose`). */
  diagnose?(): ReturnType<NonNullable<RedisTransport['diagnose']>>;
  /** The server's name in the message ("no reply from PostgreSQL"). @default 'Redis' */
  readonly server?: string;
  /** Makes the error (a store's own subclass of `RedisConnectionError`). */
  connectionError?(message: string, options?: { cause?: unknown }): RedisConnectionError;
}

interface Pending extends Slotted {
  deadline: number;
  fail: () => void;
}

/**
 * Command time-outs share one unref'd ticker instead of a timer per command (a timer costs more than a Redis
 * round trip's worth of JS on a busy hot path). The ticker runs only while commands are in flight; it never keeps
 * the process alive (a call holdfast sends on its own, such as the undo of an acquisition whose reply came too late,
 * must not hold up the exit of a process whose user is done). The commands in flight are a {@link LiveSet}, not a
 * `Set`: see there why.
 */
const pending = new LiveSet<Pending>();
let ticker: NodeJS.Timeout | undefined;
let tickMs = 25;
let tickAt = 0;

function expire(p: Pending): void {
  if (tickAt >= p.deadline) p.fail();
}

function tick(): void {
  tickAt = performance.now();
  pending.forEach(expire);
  if (pending.size === 0 && ticker) {
    clearInterval(ticker);
    ticker = undefined;
  }
}

/**
 * The error of a call that got no reply in time, with what the client knows of its connection when it is not
 * connected (its state, address and last connection error: "connect ECONNREFUSED 127.0.0.1:6379"), as message and
 * `cause`.
 */
function noReply(what: string, ms: number, transport: Diagnosable | undefined): RedisConnectionError {
  let why: ReturnType<NonNullable<RedisTransport['diagnose']>>;
  try {
    why = transport?.diagnose?.();
  } catch {
    why = undefined; // a diagnosis must never hide the time-out
  }
  const message = `${what}: no reply from ${transport?.server ?? 'Redis'} within ${ms} ms`;
  const make = (m: string, options?: { cause?: unknown }): RedisConnectionError => transport?.connectionError?.(m, options) ?? new RedisConnectionError(m, options);
  if (!why) return make(message);
  return make(`${message} (${why.state})`, why.cause === undefined ? undefined : { cause: why.cause });
}

/**
 * Races `promise` against `ms` (checked every `min(25, ms / 4)` ms by a shared unref'd ticker: it never keeps the
 * process alive). On time-out rejects with a {@link RedisConnectionError}; the command may still run on the server.
 * `onError`, when given, handles a rejection of `promise` that came in time (its result settles the returned promise).
 */
export function withTimeout<T>(
  promise: Promise<T>,
  ms: number,
  what: string,
  onError?: (error: unknown) => Promise<T>,
  transport?: Diagnosable,
): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    const entry: Pending = {
      deadline: performance.now() + ms,
      fail: () => {
        pending.delete(entry);
        reject(noReply(what, ms, transport));
      },
      [liveSlot]: undefined,
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
        if (pending.delete(entry)) resolve(value); // else: timed out, already rejected
      },
      (error: unknown) => {
        if (!pending.delete(entry)) return;
        if (onError) onError(error).then(resolve, reject);
        else reject(error);
      },
    );
  });
}

/**
 * Runs a script: EVALSHA, then EVAL on NOSCRIPT. Rejects with a holdfast error only. A script that publishes
 * wake-ups (`script.publishes`) gets `publish` as its last argument: `PUBLISH`, or `SPUBLISH` under sharded pub/sub.
 * Its arguments and its reply are typed by the script's header (see {@link ScriptDef}); this is the one place that
 * takes a reply from Redis as that type.
 *
 * The first EVALSHA is sent at once with one promise around it, its time-out's (this is every lock's hot path);
 * NOSCRIPT, cluster redirections and errors take the slower path below.
 */
export function runScript<A extends ScriptArgs, R>(
  transport: RedisTransport,
  script: ScriptDef<A, R>,
  keys: readonly string[],
  scriptArgs: NoInfer<A>,
  timeoutMs: number,
  publish: 'publish' | 'spublish' = 'publish',
): Promise<NoInfer<R>> {
  const args = script.publishes ? [...scriptArgs, publish] : scriptArgs;
  if (script.numKeys >= 0 && keys.length !== script.numKeys) {
    return Promise.reject(new Error(`internal: ${script.name} takes ${script.numKeys} keys, got ${keys.length}`));
  }
  const started = performance.now();
  return withTimeout(
    transport.evalsha(script.sha, keys, args),
    timeoutMs,
    `script ${script.name}`,
    (error) => retryScript(transport, script, keys, args, timeoutMs, started, error),
    transport,
  ) as Promise<R>;
}

/** The least time left in which {@link retryScript} starts another try. */
const MIN_TRY_MS = 20;

/**
 * After a failed first EVALSHA: EVAL on NOSCRIPT, a pause and another try on a cluster redirection, else the error.
 *
 * A try is not started when it might not finish in the time left (less than twice the longest try so far, or than
 * MIN_TRY_MS): some clients retry `TRYAGAIN` themselves before they report it (GLIDE waits about 1.3 s between its
 * tries, ioredis 100 ms, up to 16 times), so one try can take seconds, and more under load. Cut short by the timeout,
 * it would end as "no reply" (the script might still run after holdfast gave up); instead the call rejects with the
 * server's refusal (a redirection, or NOSCRIPT: the server did not have the script), marked so that
 * {@link didNotRun} recognises it and a waiting caller tries again within its own timeout.
 */
async function retryScript(
  transport: RedisTransport,
  script: ScriptDef,
  keys: readonly string[],
  args: ScriptArgs,
  timeoutMs: number,
  started: number,
  firstError: unknown,
): Promise<unknown> {
  const what = `script ${script.name}`;
  const elapsed = (): number => performance.now() - started;
  let longest = elapsed(); // the longest try so far
  let error = firstError;
  const least = Math.min(MIN_TRY_MS, timeoutMs / 4); // a quarter of a timeout shorter than 4 × MIN_TRY_MS
  const refuse = (): never => {
    const refused = NO_SCRIPT.test(messageOf(error)) ? new RedisConnectionError(`${what}: ${messageOf(error)}`, { cause: error }) : toHoldfastError(error, what);
    notRun.add(refused);
    throw refused;
  };
  for (let attempt = 1; ; attempt++) {
    const noScript = NO_SCRIPT.test(messageOf(error));
    if (!noScript) {
      if (!NOT_RUN.test(messageOf(error))) throw toHoldfastError(error, what);
      const pause = pauseAfter(SCRIPT_BACKOFF, attempt);
      if (timeoutMs - elapsed() <= pause + Math.max(2 * longest, least)) refuse();
      await sleep(pause);
    }
    if (timeoutMs - elapsed() <= Math.max(2 * longest, least)) refuse();
    const sent = performance.now();
    const left = Math.max(1, Math.round(timeoutMs - elapsed()));
    try {
      return await withTimeout(noScript ? transport.eval(script.source, keys, args) : transport.evalsha(script.sha, keys, args), left, what, undefined, transport);
    } catch (next) {
      if (next instanceof HoldfastError) throw next; // no reply in time
      error = next;
    } finally {
      longest = Math.max(longest, performance.now() - sent);
    }
  }
}

/** Runs one plain command with the same timeout and error mapping as scripts. */
export async function runCommand(transport: RedisTransport, args: readonly string[], key: string | undefined, timeoutMs: number): Promise<unknown> {
  const what = `command ${args[0] ?? ''}`;
  try {
    return await withTimeout(transport.command(args, key), timeoutMs, what, undefined, transport);
  } catch (error) {
    throw toHoldfastError(error, what);
  }
}

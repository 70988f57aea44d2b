/**
 * What every primitive shares inside one holdfast client: the transport, key names, settings, the subscriber,
 * the registry of live holds (so `close()` can release them) and the async-context store for reentrancy.
 * Internal: not exported from the package.
 */
import { AsyncLocalStorage } from 'node:async_hooks';
import { randomBytes } from 'node:crypto';
import type { ScriptArgs } from './client.js';
import { ClientClosedError, EvictionPolicyError, isHoldfastError, type LockLostError } from './errors.js';
import { LiveSet, type Slotted } from './internal/live-set.js';
import { Notifier } from './internal/notifier.js';
import type { ReplicaSync } from './internal/replica-sync.js';
import { Keys } from './keys.js';
import type { ScriptDef } from './script.js';
import type { Store } from './store.js';

/** Settings resolved from the client's options. */
export interface CoreSettings {
  prefix: string;
  watchdogLease: number;
  watchdogInterval: number;
  commandTimeout: number;
  releaseMarkerTtl: number;
  sharded: boolean;
  /** `WAIT`/`WAITAOF` after every acquisition, unless an acquire says otherwise. */
  replicaSync?: ReplicaSync | undefined;
  /** What to do about a `maxmemory-policy` that can evict locks (see `HoldfastOptions.evictionPolicy`). */
  evictionPolicy: 'warn' | 'refuse' | 'ignore';
}

/** A warning about the Redis holdfast runs on (the `warning` event). */
export interface HoldfastWarning {
  /**
   * `EVICTION_POLICY`: the server's `maxmemory-policy` can evict locks (and, for `allkeys-*`, fencing counters);
   * `EVICTION_POLICY_UNKNOWN`: `CONFIG GET maxmemory-policy` was refused (an ACL, a managed Redis), so holdfast
   * cannot tell; `POLLING`: the store cannot wake waiters (PostgreSQL's `LISTEN` does not deliver through this
   * connection, e.g. behind a transaction-mode PgBouncer, or `listen: false` was asked for), so they poll.
   */
  code: 'EVICTION_POLICY' | 'EVICTION_POLICY_UNKNOWN' | 'POLLING';
  /** What is wrong and what to do, in one sentence. */
  message: string;
  /** The server's policy, when it could be read. */
  policy?: string;
}

/**
 * The process warnings already given, by code and server (`run_id`): every client of a process that talks to one
 * server gets its `warning` event, but the process warning (for clients nobody listens to) is given once.
 */
const warnedServers = new Set<string>();

/** True the first time it is asked for `code` and `server` in this process: give the process warning then. */
export function firstProcessWarning(code: HoldfastWarning['code'], server: string): boolean {
  const key = `${code}:${server}`;
  if (warnedServers.has(key)) return false;
  warnedServers.add(key);
  return true;
}

/** Policies that never evict a key holdfast writes. */
const SAFE_POLICIES = new Set(['noeviction']);

/** Something `close()` must end: a live hold of any primitive. */
export interface Closable extends Slotted {
  /** @internal Releases in Redis (best effort) and stops timers. */
  closeHold(): Promise<void>;
}

/** Ends every hold of `holds` (releases them in the backend, best effort) and empties the set. */
export async function closeHolds(holds: LiveSet<Closable>): Promise<void> {
  const all = holds.drain();
  await Promise.allSettled(all.map((h) => h.closeHold()));
}

/** Per async call chain: lock key → the owner id this chain holds it under. */
export type HoldContext = ReadonlyMap<string, { owner: string; active: () => boolean }>;

export class Core {
  /** 128 random bits, base64url: unguessable, and short on the wire (every owner id and release marker carries it). */
  readonly clientId = randomBytes(16).toString('base64url');
  readonly keys: Keys;
  readonly notifier: Notifier;
  readonly context = new AsyncLocalStorage<HoldContext>();
  readonly holds = new LiveSet<Closable>();
  #seq = 0;
  #closed = false;

  /** The eviction-policy check: `undefined` before the first acquisition, then its outcome (see {@link Core.ready}). */
  #policy: Promise<void> | undefined;
  #policyOk = false;

  constructor(
    /** The store the primitives live in (see src/store.ts). */
    readonly store: Store,
    readonly settings: CoreSettings,
    readonly emitLost: (error: LockLostError) => void,
    /** `server`: the server's `run_id` ('' when unknown), for {@link firstProcessWarning}. */
    readonly emitWarning: (warning: HoldfastWarning, server: string) => void = () => {},
  ) {
    this.keys = new Keys(settings.prefix);
    this.notifier = new Notifier(store, settings.sharded, settings.commandTimeout);
  }

  /** The watchdog's renewal period, in ms (see `HoldHost`). */
  get watchdogInterval(): number {
    return this.settings.watchdogInterval;
  }

  /** The transport's reconnect count, where it resends commands by itself (see `RedisTransport.epoch`). */
  epoch(): number | undefined {
    return this.store.epoch?.();
  }

  /** The command scripts publish wake-ups with: `spublish` under sharded pub/sub, else `publish` (see includes/notify.lua). */
  get publishCommand(): 'publish' | 'spublish' {
    return this.settings.sharded ? 'spublish' : 'publish';
  }

  /**
   * Called before every acquisition: the first one reads the server's `maxmemory-policy` once. Returns `undefined`
   * (nothing to wait for) unless the client refuses an evicting server, in which case acquisitions wait for the check
   * and reject with {@link EvictionPolicyError} when it fails.
   */
  ready(): Promise<void> | undefined {
    if (this.#policyOk || this.settings.evictionPolicy === 'ignore') return undefined;
    this.#policy ??= this.#checkPolicy();
    if (this.settings.evictionPolicy === 'refuse') return this.#policy;
    this.#policy.catch(() => {
      /* warned */
    });
    return undefined;
  }

  async #checkPolicy(): Promise<void> {
    let policy: string | undefined;
    try {
      policy = policyOf(await this.command(['CONFIG', 'GET', 'maxmemory-policy']));
    } catch (error) {
      if (!isHoldfastError(error) || error.code !== 'SCRIPT_ERROR') {
        this.#policy = undefined; // a connection problem: ask again at the next acquisition
        throw error;
      }
      // refused (an ACL, or a managed Redis that renames CONFIG): say so once, and go on
      this.#policyOk = true;
      await this.#warn({
        code: 'EVICTION_POLICY_UNKNOWN',
        message: `holdfast could not read maxmemory-policy (${(error as Error).message}): make sure it is noeviction, or that this Redis holds no evictable data`,
      });
      return;
    }
    if (policy === undefined || SAFE_POLICIES.has(policy)) {
      this.#policyOk = true;
      return;
    }
    const error = new EvictionPolicyError(policy);
    if (this.settings.evictionPolicy === 'refuse') throw error;
    this.#policyOk = true;
    await this.#warn({ code: 'EVICTION_POLICY', message: error.message, policy });
  }

  /** Gives `warning`, naming the server it is about. */
  async #warn(warning: HoldfastWarning): Promise<void> {
    let server = '';
    try {
      // only on this rare path: which server it is, so that many clients of one process warn of it once
      server = /^run_id:(\w+)/m.exec(String(await this.command(['INFO', 'server'])))?.[1] ?? '';
    } catch {
      /* INFO refused too: once per process, whatever the server */
    }
    this.emitWarning(warning, server);
  }

  get closed(): boolean {
    return this.#closed;
  }

  /** Throws {@link ClientClosedError} once the client is closed. */
  assertOpen(): void {
    if (this.#closed) throw new ClientClosedError();
  }

  /** A fresh owner id: this client's random id and a sequence number (unguessable, unique). */
  newOwner(): string {
    return `${this.clientId}:${++this.#seq}`;
  }

  /** A fresh request id (release idempotency): unique across clients (this client's random id) and within it. */
  requestId(): string {
    return `${this.clientId}.${++this.#seq}`;
  }

  /** Runs `script`: its arguments and its reply are typed by its header (see `ScriptDef`). */
  run<A extends ScriptArgs, R>(script: ScriptDef<A, R>, keys: readonly string[], args: NoInfer<A>, timeoutMs = this.settings.commandTimeout): Promise<NoInfer<R>> {
    return this.store.run(script, keys, args, timeoutMs, this.publishCommand);
  }

  /** A plain Redis command: on another store it rejects, naming what is not available there. */
  command(args: readonly string[], key?: string, timeoutMs = this.settings.commandTimeout): Promise<unknown> {
    return this.store.command(args, key, timeoutMs);
  }

  /** Marks the core closed, releases every live hold, then closes the subscriber. */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    await closeHolds(this.holds);
    await this.notifier.close();
    await this.store.close?.();
  }
}

/** The value of `CONFIG GET maxmemory-policy` as RESP2 (a flat array) or RESP3 (a map) reply. */
function policyOf(reply: unknown): string | undefined {
  if (Array.isArray(reply)) return reply[1] === undefined ? undefined : String(reply[1]);
  if (reply instanceof Map) return reply.get('maxmemory-policy') as string | undefined;
  if (typeof reply === 'object' && reply !== null) return (reply as Record<string, string>)['maxmemory-policy'];
  return undefined;
}

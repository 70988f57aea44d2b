/**
 * What every primitive shares inside one holdfast client: the transport, key names, settings, the subscriber,
 * the registry of live holds (so `close()` can release them) and the async-context store for reentrancy.
 * Internal: not exported from the package.
 */
import { AsyncLocalStorage } from 'node:async_hooks';
import { randomBytes } from 'node:crypto';
import type { RedisTransport, ScriptArgs } from './client.js';
import { ClientClosedError, type LockLostError } from './errors.js';
import { Notifier } from './internal/notifier.js';
import type { ReplicaSync } from './internal/replica-sync.js';
import { Keys } from './keys.js';
import { runCommand, runScript, type ScriptDef } from './script.js';

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
}

/** Something `close()` must end: a live hold of any primitive. */
export interface Closable {
  /** Releases in Redis (best effort) and stops timers. */
  closeHold(): Promise<void>;
}

/** Per async call chain: lock key → the owner id this chain holds it under. */
export type HoldContext = ReadonlyMap<string, { owner: string; active: () => boolean }>;

export class Core {
  /** 128 random bits, base64url: unguessable, and short on the wire (every owner id and release marker carries it). */
  readonly clientId = randomBytes(16).toString('base64url');
  readonly keys: Keys;
  readonly notifier: Notifier;
  readonly context = new AsyncLocalStorage<HoldContext>();
  readonly holds = new Set<Closable>();
  #seq = 0;
  #closed = false;

  constructor(
    readonly transport: RedisTransport,
    readonly settings: CoreSettings,
    readonly emitLost: (error: LockLostError) => void,
  ) {
    this.keys = new Keys(settings.prefix);
    this.notifier = new Notifier(transport, settings.sharded, settings.commandTimeout);
  }

  /** The watchdog's renewal period, in ms (see `HoldHost`). */
  get watchdogInterval(): number {
    return this.settings.watchdogInterval;
  }

  /** The transport's reconnect count, where it resends commands by itself (see `RedisTransport.epoch`). */
  epoch(): number | undefined {
    return this.transport.epoch?.();
  }

  /** The command scripts publish wake-ups with: `spublish` under sharded pub/sub, else `publish` (see includes/notify.lua). */
  get publishCommand(): 'publish' | 'spublish' {
    return this.settings.sharded ? 'spublish' : 'publish';
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

  run(script: ScriptDef, keys: readonly string[], args: ScriptArgs, timeoutMs = this.settings.commandTimeout): Promise<unknown> {
    return runScript(this.transport, script, keys, args, timeoutMs, this.publishCommand);
  }

  command(args: readonly string[], key?: string, timeoutMs = this.settings.commandTimeout): Promise<unknown> {
    return runCommand(this.transport, args, key, timeoutMs);
  }

  /** Marks the core closed, releases every live hold, then closes the subscriber. */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    const holds = [...this.holds];
    this.holds.clear();
    await Promise.allSettled(holds.map((h) => h.closeHold()));
    await this.notifier.close();
  }
}

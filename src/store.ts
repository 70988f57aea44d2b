/**
 * The one seam between holdfast and the store its primitives live in. A primitive's rules are its operations: named,
 * typed, atomic steps (`lock/acquire`, `lock/release`, …), each taking the names of the records it touches (`keys`)
 * and its arguments, and answering a small reply. A store runs them: Redis (and the in-process backend) as Lua
 * scripts, PostgreSQL as SQL functions of the same name and contract. Besides its operations, a store gives the
 * wake-up channel waiters sleep on and, where it has one, a way to tell why it did not answer. The template, the hold
 * engine, the wait loop, the registry of kinds and the diagnostics never learn which store they run on.
 *
 * @module
 */
import type { ConnectionDiagnosis, RedisSubscriber, RedisTransport, ScriptArgs } from './client.js';
import { runCommand, runScript, type ScriptDef } from './script.js';

/** Which store a holdfast client runs on. */
export type StoreKind = 'redis' | 'postgres';

/** What holdfast needs from a store. */
export interface Store {
  /** Which store it is. */
  readonly kind: StoreKind;
  /**
   * Runs one operation: its typed arguments in, its typed reply out, bounded by `timeoutMs`. Rejects with a holdfast
   * error only: a `RedisConnectionError` (or its PostgreSQL subclass) when the store did not answer (the operation
   * may still have run), a `ScriptError` when it refused.
   */
  run<A extends ScriptArgs, R>(op: ScriptDef<A, R>, keys: readonly string[], args: NoInfer<A>, timeoutMs: number, publish: 'publish' | 'spublish'): Promise<NoInfer<R>>;
  /** A plain Redis command (`['PTTL', key]`): Redis stores only; another store rejects, naming what is not available. */
  command(args: readonly string[], key: string | undefined, timeoutMs: number): Promise<unknown>;
  /**
   * Opens the wake-up channel (one per holdfast client): messages published by operations go to `onMessage`.
   * `sharded`: Redis' sharded pub/sub.
   */
  createSubscriber(onMessage: (channel: string, message: string) => void, sharded: boolean): Promise<RedisSubscriber>;
  /**
   * True while the wake-up channel cannot deliver (PostgreSQL behind a transaction-mode pooler, or `listen: false`):
   * waiters then poll with the one backoff policy instead of sleeping until a message.
   */
  readonly polling?: boolean;
  /** Counts reconnects, for a client that resends commands by itself (see `RedisTransport.epoch`). */
  epoch?(): number | undefined;
  /** What the store's client knows of a connection that did not answer (see `RedisTransport.diagnose`). */
  diagnose?(): ConnectionDiagnosis | undefined;
  /** Ends what the store opened itself (a PostgreSQL store's listening connection). */
  close?(): Promise<void>;
  /** The Redis transport, on a Redis store (Redlock nodes, the demo). */
  readonly transport?: RedisTransport;
}

/** Redis (or the in-process backend, which speaks Redis): operations are Lua scripts sent over the user's client. */
export class RedisStore implements Store {
  readonly kind = 'redis';
  constructor(readonly transport: RedisTransport) {}

  diagnose(): ConnectionDiagnosis | undefined {
    return this.transport.diagnose?.();
  }

  run<A extends ScriptArgs, R>(op: ScriptDef<A, R>, keys: readonly string[], args: NoInfer<A>, timeoutMs: number, publish: 'publish' | 'spublish'): Promise<NoInfer<R>> {
    return runScript(this.transport, op, keys, args, timeoutMs, publish);
  }

  command(args: readonly string[], key: string | undefined, timeoutMs: number): Promise<unknown> {
    return runCommand(this.transport, args, key, timeoutMs);
  }

  createSubscriber(onMessage: (channel: string, message: string) => void, sharded: boolean): Promise<RedisSubscriber> {
    return this.transport.createSubscriber(onMessage, sharded);
  }

  epoch(): number | undefined {
    return this.transport.epoch?.();
  }
}

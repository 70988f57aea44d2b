/**
 * Optional replica synchronisation after an acquisition: `WAIT` (or `WAITAOF`) on the connection that wrote the
 * lock, so a failover to a replica that has the write cannot hand the lock to a second owner. Replication stays
 * asynchronous: this narrows the window, it does not make Redis a consensus system (see docs/topologies.md).
 */
import { checkDuration, checkInt, checkKnownKeys, checkOptions, optBoolean } from './validate.js';

/** How many replicas must confirm an acquisition, and how long to wait for them. */
export interface ReplicaSync {
  /** Replicas that must acknowledge the write (`WAIT numreplicas`). At least 1. */
  replicas: number;
  /** Longest wait for them, in ms (Redis' `WAIT` timeout; 0, "forever", is not accepted). */
  timeout: number;
  /**
   * Use `WAITAOF 1 <replicas> <timeout>` (Redis ≥ 7.2, `appendonly yes`): the write must also be fsynced to the AOF of
   * this master and of `replicas` replicas.
   * @default false (plain `WAIT`: in the replicas' memory)
   */
  aof?: boolean;
}

/** Validates a `replicaSync` option; `undefined` and `false` mean "no sync". */
export function checkReplicaSync(value: unknown, what: string): ReplicaSync | undefined {
  if (value === undefined || value === false) return undefined;
  const opts = checkOptions<ReplicaSync>(value, what);
  checkKnownKeys(opts, ['replicas', 'timeout', 'aof'], what);
  const sync: ReplicaSync = {
    replicas: checkInt(opts.replicas, `${what}.replicas`, 1, 1000),
    timeout: checkDuration(opts.timeout, `${what}.timeout`),
  };
  if (optBoolean(opts.aof, `${what}.aof`)) sync.aof = true;
  return sync;
}

/**
 * What {@link waitReplicas} needs of the client's core: its command timeout and a way to send one command (core.ts
 * imports this module's {@link ReplicaSync}, so this module names the two members it uses instead of importing Core).
 */
export interface ReplicaCommands {
  readonly settings: { readonly commandTimeout: number };
  command(args: readonly string[], key?: string, timeoutMs?: number): Promise<unknown>;
}

/**
 * Waits until `sync.replicas` replicas acknowledged every write this connection made so far (the acquisition among
 * them); `key` routes the command to the lock's node in a cluster. Resolves the number of replicas reached (0 when
 * `aof` and the local fsync failed).
 */
export async function waitReplicas(core: ReplicaCommands, key: string, sync: ReplicaSync): Promise<number> {
  const timeout = sync.timeout + core.settings.commandTimeout;
  if (sync.aof) {
    const reply = (await core.command(['WAITAOF', '1', String(sync.replicas), String(sync.timeout)], key, timeout)) as [number, number];
    return Number(reply[0]) >= 1 ? Number(reply[1]) : 0;
  }
  return Number(await core.command(['WAIT', String(sync.replicas), String(sync.timeout)], key, timeout));
}

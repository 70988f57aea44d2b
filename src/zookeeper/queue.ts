/**
 * The ZooKeeper queue recipe every primitive here shares: an ephemeral sequential node under the primitive's
 * directory, the holder decided by sequence order, each waiter watching only the node it waits for.
 *
 * Node names are *protected*: `_c_<guid>-<kind>-<seq>`. If the reply to a `create` is lost (connection loss,
 * timeout) the node may exist anyway; before creating again we look for a child carrying our guid and adopt it, so
 * no orphan node ever blocks the queue. The token of a hold is the node's czxid: zxids are one total order over the
 * whole ensemble, so a later grant always has a larger token, even if the directory is recreated (the sequence
 * suffix is a per-directory counter and would restart; it is never used as a token).
 *
 * @module
 */
import { AsyncLocalStorage } from 'node:async_hooks';
import { randomUUID } from 'node:crypto';
import zookeeper, { type Event, type Stat } from 'node-zookeeper-client';
import { closeHolds, type Closable, type HoldContext } from '../core.js';
import { LiveSet } from '../internal/live-set.js';
import type { AcquireContext } from '../diagnostics.js';
import { type LockLostError, ZooKeeperConnectionError } from '../errors.js';
import { now } from '../internal/clock.js';
import { Session, ZK, czxidOf, waitEvent, zkCode, type SessionLossReason } from './session.js';
import { backoff, ZOOKEEPER_BACKOFF } from '../internal/backoff.js';

/** Settings of a ZooKeeper holdfast client. */
export interface ZkSettings {
  connect: string;
  root: string;
  sessionTimeout: number;
  commandTimeout: number;
}

/** What every ZooKeeper primitive shares inside one client. */
export class ZkCore {
  readonly session: Session;
  readonly clientId = randomUUID();
  readonly context = new AsyncLocalStorage<HoldContext>();
  /** Live holds by `kind:name` → owner. */
  readonly registry = new Map<string, Map<string, Closable & { active: boolean }>>();
  readonly holds = new LiveSet<Closable>();
  #seq = 0;
  #dirs = new Set<string>();
  #closed = false;

  constructor(
    readonly settings: ZkSettings,
    readonly emitLost: (error: LockLostError) => void,
  ) {
    this.session = new Session({ connect: settings.connect, sessionTimeout: settings.sessionTimeout, commandTimeout: settings.commandTimeout });
  }

  get closed(): boolean {
    return this.#closed;
  }

  assertOpen(): void {
    if (this.#closed) throw new ZooKeeperConnectionError('the ZooKeeper holdfast client is closed');
  }

  newOwner(): string {
    return `${this.clientId}:${++this.#seq}`;
  }

  /** The directory of a primitive: `<root>/<kind>/<encoded name>`. */
  dir(kind: string, name: string): string {
    return `${this.settings.root}/${kind}/${encodeName(name)}`;
  }

  /** Creates `dir` and its parents as persistent nodes (once per session generation). */
  async ensureDir(dir: string): Promise<void> {
    const key = `${this.session.generation}:${dir}`;
    if (this.#dirs.has(key)) return;
    await this.session.call<string>((c, cb) => c.mkdirp(dir, cb));
    this.#dirs.add(key);
  }

  forgetDir(dir: string): void {
    this.#dirs.delete(`${this.session.generation}:${dir}`);
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    await closeHolds(this.holds);
    this.session.close();
  }
}

/**
 * Lock names become one path segment: percent-encoded (so `/` and non-ASCII are safe) and dots encoded too
 * (ZooKeeper refuses `.` and `..` as names).
 */
export function encodeName(name: string): string {
  return encodeURIComponent(name).replace(/\./g, '%2E');
}

/** The sequence number of a sequential child (its last 10 digits). */
export function sequenceOf(child: string): number {
  return Number(child.slice(-10));
}

/** Children in queue order. */
export function sortQueue(children: readonly string[]): string[] {
  return [...children].sort((a, b) => sequenceOf(a) - sequenceOf(b));
}

/** The kind in a protected name `_c_<guid>-<kind>-<seq>`. */
export function kindOf(child: string): string {
  const parts = child.split('-');
  return parts[parts.length - 2] ?? '';
}

/** What the primitive decides for the node at `index` of the sorted queue. */
export type Verdict = { granted: true } | { granted: false; watch: string } | { granted: false; watchChildren: true };

/** A node in a queue that was granted. */
export interface Entry {
  path: string;
  token: number;
  generation: number;
}

export interface EnqueueOptions {
  dir: string;
  kind: string;
  /** ms to wait, `undefined` = no limit, 0 = one look. */
  timeout: number | undefined;
  signal: AbortSignal | undefined;
  /** Grant without looking at the queue (a read lock taken by the write lock's owner: a downgrade). */
  bypass?: boolean;
  /** The node's data (the owner's fingerprint, for inspection). @default empty */
  data?: Buffer;
  /** The acquisition's diagnostics context, when traced: each look at the queue counts as an attempt. */
  trace?: AcquireContext | undefined;
  verdict: (sorted: string[], index: number) => Verdict;
}

/**
 * Joins the queue and waits until granted. Returns the granted entry, or `null` when the time ran out (our node is
 * then deleted before returning). Rejects with the signal's reason on abort, or a {@link ZooKeeperConnectionError}
 * when ZooKeeper cannot be reached or the session is lost while waiting (our node is deleted too, best effort).
 */
export async function enqueue(core: ZkCore, opts: EnqueueOptions): Promise<Entry | null> {
  opts.signal?.throwIfAborted();
  const session = core.session;
  const deadline = opts.timeout === undefined ? undefined : now() + opts.timeout;
  const guid = randomUUID();
  const prefix = `_c_${guid}-`;
  const { generation } = await session.current();
  // Aborts if this session is lost while we wait: our node went with it.
  const lost = new AbortController();
  const onLost = (gen: number, reason: SessionLossReason): void => {
    if (gen === generation) lost.abort(new ZooKeeperConnectionError(`the ZooKeeper session was lost while waiting (${reason})`));
  };
  session.on('lost', onLost);
  let path: string | undefined;
  let created: 'no' | 'yes' | 'unknown' = 'no';
  let granted = false;
  try {
    await core.ensureDir(opts.dir);
    path = await createProtected(core, opts.dir, prefix, opts.kind, generation, () => (created = 'unknown'), opts.data);
    created = 'yes';
    const ownPath = path;
    const name = ownPath.slice(opts.dir.length + 1);
    const readStat = (): Promise<Stat | null> => session.call<Stat | null>((c, cb) => c.exists(ownPath, cb), undefined, undefined, generation);
    // Sent with the first queue read: the czxid (token) of our node costs no extra round trip.
    let statP = readStat();
    statP.catch(() => {});
    for (;;) {
      if (lost.signal.aborted) throw lost.signal.reason;
      if (opts.trace) opts.trace.attempts++;
      try {
        const children = sortQueue(await session.call<string[]>((c, cb) => c.getChildren(opts.dir, cb), undefined, undefined, generation));
        const index = children.indexOf(name);
        if (index < 0) throw new ZooKeeperConnectionError(`our queue node ${ownPath} is gone (the session ended)`);
        const verdict: Verdict = opts.bypass ? { granted: true } : opts.verdict(children, index);
        if (verdict.granted) {
          const stat = await statP.catch(readStat);
          if (!stat) throw new ZooKeeperConnectionError(`our queue node ${ownPath} is gone (the session ended)`);
          granted = true;
          return { path: ownPath, token: czxidOf(stat), generation };
        }
        const left = deadline === undefined ? undefined : deadline - now();
        if (left !== undefined && left <= 0) return null;
        const outcome = await waitEvent(
          (watcher) =>
            'watch' in verdict
              ? session
                  .call<Stat | null>((c, cb) => c.exists(`${opts.dir}/${verdict.watch}`, watcher, cb), undefined, undefined, generation)
                  .then((s) => s !== null)
              : session.call<string[]>((c, cb) => c.getChildren(opts.dir, watcher, cb), undefined, undefined, generation).then((list) => {
                  // The queue may have changed since we read it: if it now grants us (or our node is gone), look again.
                  const sorted = sortQueue(list);
                  const at = sorted.indexOf(name);
                  return at >= 0 && !opts.verdict(sorted, at).granted;
                }),
          left,
          opts.signal,
          lost.signal,
        );
        if (outcome === 'timeout') return null;
      } catch (error) {
        // An abort, a lost session or a real error ends the wait; a dropped connection or a slow reply does not:
        // the session (and our node) outlive a reconnection, and these reads are safe to repeat.
        if (opts.signal?.aborted) throw opts.signal.reason;
        if (lost.signal.aborted) throw lost.signal.reason;
        if (!transient(error) || session.generation !== generation) throw wrap(error);
        if (deadline !== undefined && now() >= deadline) return null;
        await new Promise((r) => setTimeout(r, 50));
        statP = statP.catch(readStat);
        statP.catch(() => {});
      }
    }
  } finally {
    session.off('lost', onLost);
    if (!granted && created !== 'no') await abandon(core, opts.dir, prefix, path, generation);
  }
}

/** Creates `_c_<guid>-<kind>-` as an ephemeral sequential node; on a lost reply adopts the node if it was made. */
async function createProtected(
  core: ZkCore,
  dir: string,
  prefix: string,
  kind: string,
  generation: number,
  onUncertain: () => void,
  data?: Buffer,
): Promise<string> {
  const session = core.session;
  for (let attempt = 1; ; attempt++) {
    try {
      return await session.call<string>(
        (c, cb) =>
          data === undefined
            ? c.create(`${dir}/${prefix}${kind}-`, zookeeper.CreateMode.EPHEMERAL_SEQUENTIAL, cb)
            : c.create(`${dir}/${prefix}${kind}-`, data, zookeeper.CreateMode.EPHEMERAL_SEQUENTIAL, cb),
        undefined,
        undefined,
        generation,
      );
    } catch (error) {
      const code = zkCode(error);
      if (code === ZK.NO_NODE && attempt < 5) {
        // The directory was deleted (by an operator): make it again.
        core.forgetDir(dir);
        await core.ensureDir(dir);
        continue;
      }
      const uncertain = code === ZK.CONNECTION_LOSS || code === ZK.OPERATION_TIMEOUT || error instanceof ZooKeeperConnectionError;
      if (!uncertain || session.generation !== generation || attempt >= 5) throw wrap(error);
      onUncertain();
      // The create may have been applied: look for our guid before creating again. Requests on one connection
      // are answered in order, so this lookup sees a create that was still queued.
      const own = await findOwn(core, dir, prefix, generation).catch(() => undefined);
      if (own) return own;
    }
  }
}

/** Our node (by guid) in `dir`, if any. */
async function findOwn(core: ZkCore, dir: string, prefix: string, generation: number): Promise<string | undefined> {
  const children = await core.session.call<string[]>((c, cb) => c.getChildren(dir, cb), undefined, undefined, generation);
  const own = children.find((c) => c.startsWith(prefix));
  return own === undefined ? undefined : `${dir}/${own}`;
}

/** Deletes a node we will not use (timeout, abort, error), finding it by guid if the create's reply was lost. */
async function abandon(core: ZkCore, dir: string, prefix: string, path: string | undefined, generation: number): Promise<void> {
  const session = core.session;
  for (let attempt = 1; attempt <= 3; attempt++) {
    // A lost session took our ephemeral node with it.
    if (session.generation !== generation || session.closed) return;
    try {
      const target = path ?? (await findOwn(core, dir, prefix, generation));
      if (target === undefined) return;
      await session.call<void>((c, cb) => c.remove(target, -1, cb), undefined, undefined, generation);
      return;
    } catch (error) {
      if (zkCode(error) === ZK.NO_NODE) return;
      await backoff(ZOOKEEPER_BACKOFF, attempt);
    }
  }
  // Still unreachable: the node goes when the session does (the session deadline closes it).
}

/** The queue of `dir` in sequence order (holders first), `[]` if the directory does not exist. */
export async function readQueue(core: ZkCore, dir: string): Promise<string[]> {
  core.assertOpen();
  try {
    return sortQueue(await core.session.call<string[]>((c, cb) => c.getChildren(dir, cb)));
  } catch (error) {
    if (zkCode(error) === ZK.NO_NODE) return [];
    throw wrap(error);
  }
}

/** A connection loss or an unanswered call: the session may well be alive. */
function transient(error: unknown): boolean {
  const code = zkCode(error);
  if (code === ZK.CONNECTION_LOSS || code === ZK.OPERATION_TIMEOUT) return true;
  return error instanceof ZooKeeperConnectionError && /did not answer/.test(error.message);
}

/** ZooKeeper exceptions become {@link ZooKeeperConnectionError}s with the original as `cause`. */
export function wrap(error: unknown): unknown {
  if (error instanceof ZooKeeperConnectionError) return error;
  const code = zkCode(error);
  if (code === undefined) return error;
  return new ZooKeeperConnectionError(`ZooKeeper error ${String((error as Error).message ?? code)}`, { cause: error });
}

/** Arms a one-shot watch on our own node: `onDeleted` runs if someone deletes it. Re-arms after other events. */
export function watchOwn(core: ZkCore, path: string, generation: number, onDeleted: () => void): void {
  const session = core.session;
  const arm = (): void => {
    if (session.generation !== generation || session.closed) return;
    session
      .call<Stat | null>((c, cb) =>
        c.exists(
          path,
          (event: Event) => {
            if (event.getType() === zookeeper.Event.NODE_DELETED) onDeleted();
            else arm();
          },
          cb,
        ),
        undefined,
        undefined,
        generation,
      )
      .then((stat) => {
        if (stat === null) onDeleted();
      })
      .catch(() => {
        /* the session watchdog reports connection trouble */
      });
  };
  arm();
}

/**
 * The registry of kinds: one entry per primitive, the one place that names it. Its `kind` is the word the
 * diagnostics payloads and spans, `holdfast inspect` / `list` / `unlock --force`, the dashboard's cards and
 * `holdfast jobs` all use; `title` is the word its error messages use. An entry that lives in Redis also says how to
 * find its keys (the suffixes after `{name}`, taken from src/keys.ts, which builds every key), how to read its state
 * (holders, hold counts, leases, queue, readers, intents, permits, count: through its inspect scripts) and how to
 * force it free (waking its waiters; no key is left without the TTL it had).
 *
 * The ZooKeeper kinds live on a ZooKeeper ensemble the command line does not connect to: they are named here (their
 * diagnostics use these words) but have no `store`.
 *
 * A new primitive is one entry here; the command line, the dashboard and the channels pick it up from this table.
 *
 * @module
 */
import type { Core } from './core.js';
import type { Holdfast } from './holdfast.js';
import { fingerprint } from './internal/fingerprint.js';
import { clientIdOf } from './internal/label.js';
import { Keys } from './keys.js';
import { scripts } from './lua/scripts.gen.js';
import type { JobInfo } from './recipes/scheduler.js';

/** One holder of a primitive, as inspections show it. */
export interface HolderState {
  /** The owner id (a permit id for an expirable permit). Whoever knows it can release the hold: show its fingerprint. */
  owner: string;
  /** {@link fingerprint} of `owner`. */
  fingerprint: string;
  /** The holder's client label (the `label` client option), when its client set one and is alive; never the owner id. */
  label: string | null;
  /** Which side of a read-write lock (`read` / `write`); absent for other kinds. */
  side?: 'read' | 'write';
  /** Hold count (re-entries; 0 for a fair lock handed to a waiter that has not claimed it yet). */
  holdCount: number;
  /** ms until its lease runs out, `null` without a lease. */
  remainingTtl: number | null;
  /** Its fencing token, where the kind mints one. */
  token?: number;
  /** Permits it holds (expirable-permit semaphore). */
  permits?: number;
}

/** A waiter, as inspections show it. */
export interface WaiterState {
  /** Its owner id. */
  owner: string;
  /** {@link fingerprint} of `owner`. */
  fingerprint: string;
  /** Its client's label, when known. */
  label: string | null;
  /** ms it has waited, where the kind records it (a plain lock's waiters). */
  waitedMs?: number;
}

/** The state of one primitive under one name: what `holdfast inspect` and the dashboard read. */
export interface KindState {
  /** The registry kind. */
  kind: KindName;
  /** Its name. */
  name: string;
  /** True when it is held (or, for a latch, still closed; for a job, claimed). A counting semaphore is never held: it has no holders to tell. */
  held: boolean;
  /** Its holders (an exclusive kind has at most one). */
  holders: HolderState[];
  /** The fencing token of the exclusive holder, 0 when none. */
  token: number;
  /** The last fencing token minted for this name, where the kind mints them. */
  lastToken: number | null;
  /** ms until the exclusive holder's lease (or a latch's TTL) runs out, `null` when none. */
  remainingTtl: number | null;
  /** How many wait (a lock's waiters, a fair lock's queue, a read-write lock's waiting writers), `null` where Redis has no record of waiters. */
  waiters: number | null;
  /** The waiters Redis names, head (or longest waiting) first; at most 100. */
  queue: WaiterState[];
  /** Free permits (semaphores). */
  available?: number;
  /** Permits taken (expirable-permit semaphore). */
  acquired?: number;
  /** The count (latch). */
  count?: number;
  /** A run-once job's record (its instances by fingerprint: the record keeps no owner id of a finished run). */
  job?: JobInfo;
}

/** How one kind lives in Redis. */
export interface KindStore {
  /** The key suffixes after `{name}` that mark one of this kind (from src/keys.ts); the first is its main key. */
  readonly suffixes: readonly string[];
  /** Reads it; `undefined` when there is nothing under the name (free, or never used). */
  readonly read: (holdfast: Holdfast, name: string) => Promise<KindState | undefined>;
  /** Frees it whoever holds it, waking its waiters; `undefined` when the kind cannot be forced (say why in `cannotForce`). */
  readonly forceFree?: (holdfast: Holdfast, name: string) => Promise<boolean>;
  /** Why `forceFree` is missing. */
  readonly cannotForce?: string;
}

/** One kind of primitive. */
export interface KindEntry {
  /** The name used everywhere (channels, spans, CLI, dashboard). */
  readonly kind: KindName;
  /** The word error messages use (`fair lock "x" was already released`). */
  readonly title: string;
  /**
   * What its held objects report on the diagnostics channels: a kind (its own, or a side of a read-write lock) and
   * the word the hold engine and its error messages use for it.
   */
  readonly held: readonly { readonly kind: HeldKind; readonly title: string }[];
  /** How it lives in Redis; absent for kinds the command line cannot reach (ZooKeeper) or that hold other kinds (multi-lock). */
  readonly store?: KindStore;
}

/** Every kind's name. */
export const KIND_NAMES = [
  'lock',
  'fair-lock',
  'read-write-lock',
  'semaphore',
  'permit-semaphore',
  'latch',
  'job',
  'multi-lock',
  'redlock',
  'redlock-semaphore',
  'zk-lock',
  'zk-read-write-lock',
  'zk-semaphore',
] as const;

/** A kind's name (see {@link KIND_NAMES}). */
export type KindName = (typeof KIND_NAMES)[number];

/**
 * The kinds a held object reports on the diagnostics channels: each kind's own name, except the read-write locks,
 * whose two sides report `read-lock` / `write-lock` (`zk-read-lock` / `zk-write-lock`).
 */
export type HeldKind = Exclude<KindName, 'read-write-lock' | 'zk-read-write-lock' | 'latch' | 'job'> | 'read-lock' | 'write-lock' | 'zk-read-lock' | 'zk-write-lock';

/** Most waiters / readers / leases one reading lists. */
const LIST_MAX = 100;

/** The suffix after `{name}` of a key built by `build` (so that the only spelling of a key name stays in src/keys.ts). */
function suffix(build: (keys: Keys, name: string) => string): string {
  const keys = new Keys('');
  return build(keys, 'x').slice(keys.base('x').length);
}

function coreOf(holdfast: Holdfast): Core {
  return holdfast.core;
}

/**
 * Labels of the clients behind `owners` (by the `label` client option), looked up once each. A client that set no
 * label, an owner id not minted by a client (an explicit `owner`), or a client gone for a while: `null`.
 */
export async function labelsOf(core: Core, owners: readonly string[]): Promise<Map<string, string | null>> {
  const byClient = new Map<string, string | null>();
  for (const owner of owners) {
    const client = clientIdOf(owner);
    if (client !== undefined) byClient.set(client, null);
  }
  await Promise.all(
    [...byClient.keys()].map(async (client) => {
      const key = core.keys.clientLabel(fingerprint(client));
      const label = await core.command(['GET', key], key);
      byClient.set(client, typeof label === 'string' ? label : Buffer.isBuffer(label) ? label.toString() : null);
    }),
  );
  const labels = new Map<string, string | null>();
  for (const owner of owners) {
    const client = clientIdOf(owner);
    labels.set(owner, client === undefined ? null : (byClient.get(client) ?? null));
  }
  return labels;
}

/** Fills in fingerprints and labels. */
async function people(core: Core, holders: Omit<HolderState, 'fingerprint' | 'label'>[], waiters: Omit<WaiterState, 'fingerprint' | 'label'>[]) {
  const labels = await labelsOf(core, [...holders.map((h) => h.owner), ...waiters.map((w) => w.owner)]);
  return {
    holders: holders.map((h): HolderState => ({ ...h, fingerprint: fingerprint(h.owner), label: labels.get(h.owner) ?? null })),
    queue: waiters.map((w): WaiterState => ({ ...w, fingerprint: fingerprint(w.owner), label: labels.get(w.owner) ?? null })),
  };
}

const lockStore: KindStore = {
  suffixes: [suffix((k, n) => k.lock(n)), suffix((k, n) => k.lockWaiters(n))],
  async read(holdfast, name) {
    const core = coreOf(holdfast);
    const [info, waiting] = await Promise.all([
      holdfast.lock(name).inspect(),
      core.run(scripts['lock/waiters'], [core.keys.lockWaiters(name)], [LIST_MAX]) as Promise<[number, number, ...(string | number)[]]>,
    ]);
    const [now, count, ...flat] = waiting;
    const waiters: Omit<WaiterState, 'fingerprint' | 'label'>[] = [];
    for (let i = 0; i + 1 < flat.length; i += 2) waiters.push({ owner: String(flat[i]), waitedMs: Math.max(0, Number(now) - Number(flat[i + 1])) });
    if (info.owner === null && Number(count) === 0) return undefined;
    const holders = info.owner === null ? [] : [{ owner: info.owner, holdCount: info.holdCount, remainingTtl: info.remainingTtl, token: info.token }];
    return {
      kind: 'lock',
      name,
      held: info.owner !== null,
      ...(await people(core, holders, waiters)),
      token: info.token,
      lastToken: info.lastToken,
      remainingTtl: info.remainingTtl,
      waiters: Number(count),
    };
  },
  forceFree: (holdfast, name) => holdfast.lock(name).forceUnlock(),
};

const fairLockStore: KindStore = {
  suffixes: [suffix((k, n) => k.fairLock(n)), suffix((k, n) => k.fairQueue(n))],
  async read(holdfast, name) {
    const info = await holdfast.fairLock(name).inspect();
    if (info.owner === null && info.queueLength === 0) return undefined;
    const holders = info.owner === null ? [] : [{ owner: info.owner, holdCount: info.holdCount, remainingTtl: info.remainingTtl, token: info.token }];
    return {
      kind: 'fair-lock',
      name,
      held: info.owner !== null,
      ...(await people(coreOf(holdfast), holders, info.waiters.slice(0, LIST_MAX).map((owner) => ({ owner })))),
      token: info.token,
      lastToken: info.lastToken,
      remainingTtl: info.remainingTtl,
      waiters: info.queueLength,
    };
  },
  forceFree: (holdfast, name) => holdfast.fairLock(name).forceUnlock(),
};

const readWriteLockStore: KindStore = {
  suffixes: [suffix((k, n) => k.rwWriter(n)), suffix((k, n) => k.rwReaders(n)), suffix((k, n) => k.rwIntents(n))],
  async read(holdfast, name) {
    const core = coreOf(holdfast);
    const k = core.keys;
    const [info, flat] = await Promise.all([
      holdfast.readWriteLock(name).inspect(),
      core.run(scripts['rw/holders'], [k.rwReaders(name), k.rwReadCounts(name), k.rwIntents(name)], [LIST_MAX]) as Promise<(string | number)[]>,
    ]);
    const holders: Omit<HolderState, 'fingerprint' | 'label'>[] = [];
    if (info.writer !== null) holders.push({ owner: info.writer, side: 'write', holdCount: info.writeHoldCount, remainingTtl: info.remainingTtl, token: info.token });
    for (let i = 0; i + 2 < flat.length; i += 3) holders.push({ owner: String(flat[i]), side: 'read', holdCount: Number(flat[i + 1]), remainingTtl: Number(flat[i + 2]) });
    if (holders.length === 0 && info.waitingWriters === 0) return undefined;
    return {
      kind: 'read-write-lock',
      name,
      held: holders.length > 0,
      ...(await people(core, holders, [])),
      token: info.token,
      lastToken: info.lastToken,
      remainingTtl: info.remainingTtl,
      waiters: info.waitingWriters,
    };
  },
  forceFree: (holdfast, name) => holdfast.readWriteLock(name).forceUnlock(),
};

const semaphoreStore: KindStore = {
  suffixes: [suffix((k, n) => k.semaphore(n))],
  async read(holdfast, name) {
    const core = coreOf(holdfast);
    const key = core.keys.semaphore(name);
    const [free, pttl] = await Promise.all([core.command(['GET', key], key), core.command(['PTTL', key], key)]);
    if (free === null || free === undefined) return undefined;
    return {
      kind: 'semaphore',
      name,
      held: false,
      holders: [],
      token: 0,
      lastToken: null,
      remainingTtl: Number(pttl) >= 0 ? Number(pttl) : null,
      waiters: null,
      queue: [],
      available: Number(free),
    };
  },
  cannotForce: 'a counting semaphore does not record who took its permits: give them back with `semaphore(name).release(n)` or `addPermits(n)`',
};

const permitSemaphoreStore: KindStore = {
  suffixes: [suffix((k, n) => k.permits(n)), suffix((k, n) => k.permitLeases(n))],
  async read(holdfast, name) {
    const core = coreOf(holdfast);
    const k = core.keys;
    const keys = [k.permits(name), k.permitLeases(name), k.permitWeights(name)];
    const [exists, reply] = await Promise.all([
      core.command(['EXISTS', ...keys], keys[0]),
      core.run(scripts['psem/leases'], keys, [LIST_MAX]) as Promise<[number, number, number, ...(string | number)[]]>,
    ]);
    if (Number(exists) === 0) return undefined;
    const [free, held, , ...flat] = reply;
    const holders: Omit<HolderState, 'fingerprint' | 'label'>[] = [];
    for (let i = 0; i + 2 < flat.length; i += 3) {
      const left = Number(flat[i + 2]);
      holders.push({ owner: String(flat[i]), holdCount: 1, permits: Number(flat[i + 1]), remainingTtl: left < 0 ? null : left });
    }
    return {
      kind: 'permit-semaphore',
      name,
      held: holders.length > 0,
      ...(await people(core, holders, [])),
      token: 0,
      lastToken: null,
      remainingTtl: null,
      waiters: null,
      available: Number(free),
      acquired: Number(held),
    };
  },
  async forceFree(holdfast, name) {
    const core = coreOf(holdfast);
    const k = core.keys;
    const back = await core.run(scripts['psem/force-release'], [k.permits(name), k.permitLeases(name), k.permitWeights(name)], [k.permitsChannel(name)]);
    return Number(back) > 0;
  },
};

const latchStore: KindStore = {
  suffixes: [suffix((k, n) => k.latch(n))],
  async read(holdfast, name) {
    const core = coreOf(holdfast);
    const [count, pttl] = (await core.run(scripts['latch/state'], [core.keys.latch(name)], [])) as [number, number];
    if (Number(count) <= 0) return undefined;
    return {
      kind: 'latch',
      name,
      held: true,
      holders: [],
      token: 0,
      lastToken: null,
      remainingTtl: Number(pttl) >= 0 ? Number(pttl) : null,
      waiters: null,
      queue: [],
      count: Number(count),
    };
  },
  /** Opens the latch (deletes its count) and wakes every waiter. */
  forceFree: (holdfast, name) => holdfast.countDownLatch(name).delete(),
};

const jobStore: KindStore = {
  suffixes: [suffix((k, n) => k.job(n))],
  async read(holdfast, name) {
    const job = await holdfast.inspectJob(name);
    if (!job) return undefined;
    return {
      job,
      kind: 'job',
      name,
      held: job.running || job.lockedForMs > 0,
      holders: [],
      token: 0,
      lastToken: null,
      remainingTtl: job.lockedForMs > 0 ? job.lockedForMs : null,
      waiters: null,
      queue: [],
    };
  },
  async forceFree(holdfast, name) {
    const core = coreOf(holdfast);
    return Number(await core.run(scripts['scheduler/force-release'], [core.keys.job(name)], [])) === 1;
  },
};

/** The registry: every kind, in the order listings show them. */
export const KINDS: readonly KindEntry[] = [
  { kind: 'lock', title: 'lock', held: [{ kind: 'lock', title: 'lock' }], store: lockStore },
  { kind: 'fair-lock', title: 'fair lock', held: [{ kind: 'fair-lock', title: 'fair lock' }], store: fairLockStore },
  {
    kind: 'read-write-lock',
    title: 'read-write lock',
    held: [
      { kind: 'read-lock', title: 'read lock' },
      { kind: 'write-lock', title: 'write lock' },
    ],
    store: readWriteLockStore,
  },
  { kind: 'permit-semaphore', title: 'expirable-permit semaphore', held: [{ kind: 'permit-semaphore', title: 'permit' }], store: permitSemaphoreStore },
  { kind: 'semaphore', title: 'semaphore', held: [{ kind: 'semaphore', title: 'semaphore' }], store: semaphoreStore },
  { kind: 'latch', title: 'count-down latch', held: [], store: latchStore },
  { kind: 'job', title: 'run-once job', held: [], store: jobStore },
  // holds the locks it names: each shows up under its own kind
  { kind: 'multi-lock', title: 'multi-lock', held: [{ kind: 'multi-lock', title: 'multi-lock' }] },
  // on each of its servers a Redlock is a plain lock (the same key and value): point the command line at one of them
  { kind: 'redlock', title: 'redlock', held: [{ kind: 'redlock', title: 'redlock' }] },
  { kind: 'redlock-semaphore', title: 'redlock semaphore', held: [{ kind: 'redlock-semaphore', title: 'redlock semaphore' }] },
  // ZooKeeper: the command line connects to Redis only
  { kind: 'zk-lock', title: 'ZooKeeper lock', held: [{ kind: 'zk-lock', title: 'zk-lock' }] },
  {
    kind: 'zk-read-write-lock',
    title: 'ZooKeeper read-write lock',
    held: [
      { kind: 'zk-read-lock', title: 'zk-read-lock' },
      { kind: 'zk-write-lock', title: 'zk-write-lock' },
    ],
  },
  { kind: 'zk-semaphore', title: 'ZooKeeper semaphore', held: [{ kind: 'zk-semaphore', title: 'zk-semaphore' }] },
];

/** The registry entry of `kind`. */
export function kindEntry(kind: string): KindEntry | undefined {
  return KINDS.find((entry) => entry.kind === kind);
}

/** The hold engine's words for its holds (`HoldOps.kind`, in error messages) → their channel kind. */
const HELD_BY_TITLE: ReadonlyMap<string, HeldKind> = new Map(KINDS.flatMap((entry) => entry.held.map((h) => [h.title, h.kind] as const)));

/** The channel kind of a hold engine word (`'fair lock'` → `'fair-lock'`), or the word itself when it is a kind. */
export function heldKindOf(word: string): HeldKind {
  return HELD_BY_TITLE.get(word) ?? (word as HeldKind);
}

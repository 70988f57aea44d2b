/**
 * How each kind of the registry (src/kinds.ts) that lives in Redis is found, read and forced free: the stores
 * `holdfast inspect` / `list` / `unlock --force` and the dashboard use. Every `redis` kind of the registry has one
 * (checked when this module loads).
 *
 * @module
 */
import type { Core } from './core.js';
import type { Holdfast } from './holdfast.js';
import { fingerprint } from './internal/fingerprint.js';
import { clientIdOf } from './internal/label.js';
import { Keys } from './keys.js';
import { KINDS, type HolderState, type KindEntry, type KindName, type KindState, type WaiterState } from './kinds.js';
import { scripts } from './lua/scripts.gen.js';

/**
 * How one kind lives in Redis. (Declared here, not in src/kinds.ts: it takes a client, and src/kinds.ts stays below
 * the client, which imports it through the primitives and the diagnostics.)
 */
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
      byClient.set(client, await labelOf(core, fingerprint(client)));
    }),
  );
  const labels = new Map<string, string | null>();
  for (const owner of owners) {
    const client = clientIdOf(owner);
    labels.set(owner, client === undefined ? null : (byClient.get(client) ?? null));
  }
  return labels;
}

/** The label a client keeps under the fingerprint of its client id (`null`: none set, or the client is gone). */
async function labelOf(core: Core, clientFingerprint: string): Promise<string | null> {
  const key = core.keys.clientLabel(clientFingerprint);
  const label: unknown = await core.run(scripts['label/get'], [key], []);
  return typeof label === 'string' ? label : Buffer.isBuffer(label) ? label.toString() : null;
}

/** The label of a scheduler instance by its fingerprint (that of its client id: the key of its client's label). */
function instanceLabel(core: Core, instance: string | null): Promise<string | null> {
  return instance === null ? Promise.resolve(null) : labelOf(core, instance);
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
      core.run(scripts['lock/waiters'], [core.keys.lockWaiters(name)], [LIST_MAX]),
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
      core.run(scripts['rw/holders'], [k.rwReaders(name), k.rwReadCounts(name), k.rwIntents(name)], [LIST_MAX]),
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
      core.run(scripts['psem/leases'], keys, [LIST_MAX]),
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
    const [count, pttl] = await core.run(scripts['latch/state'], [core.keys.latch(name)], []);
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
    const core = coreOf(holdfast);
    const [runningOnLabel, lastRunByLabel] = await Promise.all([instanceLabel(core, job.runningOn), instanceLabel(core, job.lastRunBy)]);
    return {
      job: { ...job, runningOnLabel, lastRunByLabel },
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

/** Each `redis` kind's store. */
const electionStore: KindStore = {
  suffixes: [suffix((k, n) => k.election(n)), suffix((k, n) => k.electionCandidates(n))],
  async read(holdfast, name) {
    const core = coreOf(holdfast);
    const key = core.keys.election(name);
    const [info, owner] = await Promise.all([holdfast.election(name).inspect(), core.command(['HGET', key, 'o'], key)]);
    if (info.leader === null && info.candidates.length === 0) return undefined;
    const leader = info.leader;
    return {
      kind: 'election',
      name,
      held: leader !== null,
      holders:
        leader === null
          ? []
          : [{ owner: typeof owner === 'string' ? owner : Buffer.isBuffer(owner) ? owner.toString() : '', fingerprint: leader.fingerprint, label: leader.label, holdCount: 1, remainingTtl: leader.remainingMs, token: leader.term }],
      token: leader?.term ?? 0,
      lastToken: info.lastTerm,
      remainingTtl: leader?.remainingMs ?? null,
      waiters: info.candidates.length,
      queue: info.candidates.map((c) => ({ owner: '', fingerprint: c.fingerprint, label: c.label })),
    };
  },
  /** Deposes the leader and wakes the candidates (the deposed leader's signal aborts at its next renewal). */
  forceFree: (holdfast, name) => holdfast.election(name).forceResign(),
};
const STORES: Partial<Record<KindName, KindStore>> = {
  lock: lockStore,
  'fair-lock': fairLockStore,
  'read-write-lock': readWriteLockStore,
  'permit-semaphore': permitSemaphoreStore,
  semaphore: semaphoreStore,
  latch: latchStore,
  job: jobStore,
  election: electionStore,
};

/** A registry kind that lives in Redis, with its store. */
export interface StoredKind extends KindEntry {
  /** How it is found, read and forced free. */
  readonly store: KindStore;
}

/** The registry's kinds that live in Redis, each with its store, in the registry's order. */
export const STORED_KINDS: readonly StoredKind[] = KINDS.filter((entry) => entry.lives === 'redis').map((entry) => {
  const store = STORES[entry.kind];
  if (!store) throw new Error(`holdfast: the kind "${entry.kind}" lives in Redis but has no store`);
  return { ...entry, store };
});

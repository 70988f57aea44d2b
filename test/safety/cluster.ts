/**
 * The Redis Cluster side of the harness: the names a many-names scenario locks (planned so that many of them fall in
 * the slots the nemesis migrates, and several share a slot elsewhere), and what the cluster holds after the run (the
 * fencing counters, keys without a TTL), read node by node.
 *
 * @module
 */
import { Redis } from 'ioredis';
import { Keys, SLOTS, slotOf } from '../../src/keys.js';
import type { RedisCluster } from '../support/cluster.js';
import { cli } from '../support/redis-cli.js';
import type { HistoryEvent, NemesisEvent } from './history.js';
import { rng } from './protocol.js';

/** How many names of which kind a many-names scenario locks. */
export interface NamePlanSpec {
  /** Slots the nemesis migrates: one from each equal part of the slot range (so, at first, on different masters). */
  migratingSlots: number;
  /** Names in each migrating slot. */
  perMigratingSlot: number;
  /** Other slots that several names share, and how many names each. */
  sharedSlots: number;
  perSharedSlot: number;
  /** Names anywhere (random slots). */
  scattered: number;
}

export interface NamePlan {
  /** Every name, shuffled (a window of consecutive names mixes all groups). */
  names: string[];
  /** The slots to migrate. */
  migrating: number[];
}

/**
 * Plans the names under `prefix` for `seed`. A name in a chosen slot is found without a search: Redis' CRC16 (zero
 * start, no final XOR) is linear, so `slot(base + s) = slot(base + "\0\0\0") ^ slot(s)` for a 3-character `s`, and a
 * table of every `slot(s)` gives, for a base, the suffixes that land it in any slot. Each name is checked against the
 * library's own `slotOf` of its lock key.
 */
export function planNames(seed: number, prefix: string, spec: NamePlanSpec): NamePlan {
  const random = rng(seed);
  const keys = new Keys(prefix);
  const part = Math.floor(SLOTS / spec.migratingSlots);
  const migrating = Array.from({ length: spec.migratingSlots }, (_, i) => i * part + Math.floor(random() * part));
  const shared: number[] = [];
  while (shared.length < spec.sharedSlots) {
    const slot = Math.floor(random() * SLOTS);
    if (!migrating.includes(slot) && !shared.includes(slot)) shared.push(slot);
  }
  const alphabet = '0123456789abcdefghijklmnopqrstuvwxyz';
  const bySlot = new Map<number, string[]>();
  for (const a of alphabet)
    for (const b of alphabet)
      for (const c of alphabet) {
        const s = a + b + c;
        const slot = slotOf(s);
        bySlot.set(slot, [...(bySlot.get(slot) ?? []), s]);
      }
  const inSlots = (slots: number[], per: number, tag: string): string[] => {
    const found = new Map<number, string[]>(slots.map((s) => [s, []]));
    for (let i = 0; [...found.values()].some((l) => l.length < per); i++) {
      const base = `${tag}${seed.toString(36)}-${i.toString(36)}-`;
      const z = slotOf(`${base}\0\0\0`);
      for (const slot of slots) {
        const list = found.get(slot)!;
        for (const s of bySlot.get(z ^ slot) ?? []) if (list.length < per) list.push(base + s);
      }
    }
    const names = [...found.values()].flat();
    for (const name of names) {
      const want = slots.find((s) => found.get(s)!.includes(name));
      if (slotOf(keys.lock(name)) !== want) throw new Error(`name planning: ${name} is not in slot ${want}`);
    }
    return names;
  };
  const names = [
    ...inSlots(migrating, spec.perMigratingSlot, 'm'),
    ...inSlots(shared, spec.perSharedSlot, 's'),
    ...Array.from({ length: spec.scattered }, (_, i) => `r${seed.toString(36)}-${i.toString(36)}`),
  ];
  for (let i = names.length - 1; i > 0; i--) {
    const j = Math.floor(random() * (i + 1));
    [names[i], names[j]] = [names[j]!, names[i]!];
  }
  return { names, migrating };
}

/** What the cluster's masters hold under a prefix after a run. */
export interface ClusterState {
  /** Keys under the prefix, on every master. */
  keys: number;
  /** Fencing counters (`…:fence`): key, its slot, its value, the port of the node that holds it. */
  counters: { key: string; slot: number; value: number; port: number }[];
  /** Keys held by a node that does not serve their slot. */
  misplaced: string[];
  /** Keys other than the counters that have no TTL. */
  withoutTtl: string[];
}

/** Reads every master: SCAN under `prefix`, GET each counter, PTTL every other key (`ttl -1`: none). */
export async function inspectCluster(cluster: RedisCluster, prefix: string): Promise<ClusterState> {
  const state: ClusterState = { keys: 0, counters: [], misplaced: [], withoutTtl: [] };
  for (const server of await cluster.masters()) {
    const redis = new Redis(server.port, '127.0.0.1', { maxRetriesPerRequest: 3 });
    redis.on('error', () => {});
    try {
      const owned = new Set<number>();
      for (const [lo, hi, master] of await redis.cluster('SLOTS')) {
        if (master?.[1] === server.port) for (let s = lo; s <= hi; s++) owned.add(s);
      }
      let cursor = '0';
      do {
        const [next, batch] = await redis.scan(cursor, 'MATCH', `${prefix}*`, 'COUNT', 1000);
        cursor = next;
        state.keys += batch.length;
        for (const key of batch) if (!owned.has(slotOf(key))) state.misplaced.push(key);
        const counters = batch.filter((k) => k.endsWith(':fence'));
        const others = batch.filter((k) => !k.endsWith(':fence'));
        // (one command per key: a multi-key command across slots is refused in a Cluster, even on one node)
        const values = await Promise.all(counters.map((k) => redis.get(k)));
        counters.forEach((key, i) => state.counters.push({ key, slot: slotOf(key), value: Number(values[i] ?? 0), port: server.port }));
        const ttls = await Promise.all(others.map((k) => redis.pttl(k)));
        others.forEach((key, i) => {
          if (ttls[i] === -1) state.withoutTtl.push(key);
        });
      } while (cursor !== '0');
    } finally {
      redis.disconnect();
    }
  }
  return state;
}

/** Puts `count` plain keys without a TTL (outside the lock prefix) in each of `slots`, next to the names in them. */
export async function addFillers(cluster: RedisCluster, prefix: string, names: readonly string[], slots: readonly number[], count: number): Promise<void> {
  if (count === 0) return;
  const keys = new Keys(prefix);
  for (const slot of slots) {
    const tag = names.find((n) => slotOf(keys.lock(n)) === slot);
    if (tag === undefined) throw new Error(`no name in slot ${slot}`);
    const pairs = Array.from({ length: count }, (_, i) => [`filler:{${tag}}:${i}`, 'x']).flat();
    await cli(await cluster.ownerOf(slot), 'MSET', ...pairs);
  }
}

const tally = (codes: Iterable<string>): string => {
  const counts = new Map<string, number>();
  for (const c of codes) counts.set(c, (counts.get(c) ?? 0) + 1);
  return counts.size === 0 ? 'none' : [...counts].sort((a, b) => b[1] - a[1]).map(([c, n]) => `${n} × ${c}`).join(', ');
};

/**
 * What a many-names Cluster run left and did, beyond the history checker: the fencing counters (at most one per slot,
 * never more than 16,384 nor than the slots locked, each on the node serving its slot, none below a token granted from
 * it), no key under the prefix without a TTL, no error out of holdfast that is not one of its own; and the figures
 * (migrations, acquisitions and failures by code, tokens). `why` lists what fails the run.
 */
export async function checkCluster(
  cluster: RedisCluster,
  prefix: string,
  events: readonly HistoryEvent[],
  migrated: readonly number[],
): Promise<{ notes: string[]; why: string[] }> {
  const keys = new Keys(prefix);
  const slotCache = new Map<string, number>();
  const slotOfName = (name: string): number => {
    let slot = slotCache.get(name);
    if (slot === undefined) slotCache.set(name, (slot = slotOf(keys.lock(name))));
    return slot;
  };
  const split = (lock: string) => ({ kind: lock.slice(0, lock.indexOf(':')), name: lock.slice(lock.indexOf(':') + 1) });
  const why: string[] = [];
  const notes: string[] = [];

  const grants = events.filter((e): e is Extract<HistoryEvent, { type: 'acq.ok' }> => e.type === 'acq.ok');
  const invs = new Map<string, number>();
  for (const e of events) if (e.type === 'acq.inv') invs.set(e.grant, e.ref);
  const attemptedSlots = new Set(events.flatMap((e) => (e.type === 'acq.inv' ? [slotOfName(split(e.lock).name)] : [])));
  const migrations = events.filter((e): e is NemesisEvent => e.type === 'nemesis' && e.kind === 'migrate-slot');
  const movedKeys = migrations.reduce((sum, m) => sum + Number(/(\d+) keys/.exec(m.target)?.[1] ?? 0), 0);
  const ttlChecked = migrations.reduce((sum, m) => sum + Number(/(\d+) lock keys/.exec(m.target)?.[1] ?? 0), 0);

  // Grants by slot: the largest token each slot's counter handed out.
  const maxBySlot = new Map<number, number>();
  const namesBySlot = new Map<number, Set<string>>();
  for (const g of grants) {
    const slot = slotOfName(split(g.lock).name);
    maxBySlot.set(slot, Math.max(maxBySlot.get(slot) ?? 0, g.token));
    namesBySlot.set(slot, (namesBySlot.get(slot) ?? new Set()).add(split(g.lock).name));
  }
  const inMigrated = grants.filter((g) => migrated.includes(slotOfName(split(g.lock).name)));
  const across = inMigrated.filter((g) => {
    const slot = slotOfName(split(g.lock).name);
    const from = invs.get(g.grant) ?? g.sendRef;
    return migrations.some((m) => m.slot === slot && m.from <= g.ref && m.to >= from);
  });
  const released = new Map<string, number>();
  for (const e of events) if (e.type === 'rel.inv') released.set(e.grant, e.ref);
  const heldAcross = inMigrated.filter((g) => {
    const slot = slotOfName(split(g.lock).name);
    const until = released.get(g.grant) ?? Infinity;
    return migrations.some((m) => m.slot === slot && m.from <= until && m.to >= g.ref);
  });
  const names = new Set(grants.map((g) => split(g.lock).name));
  notes.push(
    `${grants.length} acquisitions (${tally(grants.map((g) => split(g.lock).kind))}) of ${names.size} distinct names in ${namesBySlot.size} slots; ` +
      `${[...namesBySlot.values()].filter((s) => s.size > 1).length} slots had grants of 2 or more names (their tokens checked in grant order across names); ` +
      `${inMigrated.length} acquisitions in the migrated slots: ${across.length} acquired and ${heldAcross.length} held while their slot was migrating.`,
  );
  notes.push(
    `${migrations.length} slot migrations (${migrated.map((s) => `slot ${s}: ${migrations.filter((m) => m.slot === s).length}`).join(', ')}), ${movedKeys} keys moved in all; ` +
      `${ttlChecked} lock keys found in a slot on its new node right after its migration, each checked for a TTL.`,
  );
  if (migrations.length === 0) why.push('no slot migration happened');
  if (across.length === 0 && inMigrated.length === 0) why.push('no acquisition in a migrated slot');

  const failed = events.filter((e): e is Extract<HistoryEvent, { type: 'acq.fail' | 'acq.info' }> => (e.type === 'acq.fail' || e.type === 'acq.info') && e.code !== 'STOPPED');
  const relNot = events.filter((e): e is Extract<HistoryEvent, { type: 'rel.fail' | 'rel.info' }> => e.type === 'rel.fail' || e.type === 'rel.info');
  const extNot = events.filter((e): e is Extract<HistoryEvent, { type: 'ext.fail' | 'ext.info' }> => e.type === 'ext.fail' || e.type === 'ext.info');
  // a failure counts as "in a migration" when its attempt overlapped a migration of its name's slot
  const duringMigration = failed.filter((e) => {
    const slot = slotOfName(split(e.lock).name);
    const from = invs.get(e.grant) ?? e.ref;
    return migrations.some((m) => m.slot === slot && m.from <= e.ref && m.to >= from);
  });
  notes.push(
    `Acquisitions failed: ${failed.length}, ${duringMigration.length} of them while their slot was migrating (${tally(failed.map((e) => e.code))}); releases not confirmed: ${relNot.length} (${tally(relNot.map((e) => e.code))}); ` +
      `extensions failed: ${extNot.length}; locks lost (signal aborted): ${events.filter((e) => e.type === 'lost').length}.`,
  );
  const untyped = [...failed, ...relNot, ...extNot].filter((e) => e.code.startsWith('untyped'));
  if (untyped.length) why.push(`${untyped.length} error(s) that are not holdfast's (first: ${untyped[0]!.code})`);

  const state = await inspectCluster(cluster, prefix);
  const countersBySlot = new Map<number, ClusterState['counters']>();
  for (const c of state.counters) countersBySlot.set(c.slot, [...(countersBySlot.get(c.slot) ?? []), c]);
  const shared = [...countersBySlot.values()].filter((l) => l.length > 1);
  const maxToken = Math.max(0, ...grants.map((g) => g.token));
  notes.push(
    `Largest token: ${maxToken}; in the migrated slots: ${migrated
      .map((s) => `slot ${s}: largest token ${maxBySlot.get(s) ?? 'none'}, counter ${countersBySlot.get(s)?.[0]?.value ?? 'none'}`)
      .join('; ')}.`,
  );
  notes.push(
    `After the run: ${state.counters.length} fencing counter keys (slots locked: ${attemptedSlots.size}; limit 16,384), ${shared.length} slots with more than one counter, ` +
      `${state.misplaced.length} keys on a node that does not serve their slot, ${state.withoutTtl.length} of ${state.keys - state.counters.length} other keys without a TTL.`,
  );
  if (state.counters.length > 16_384) why.push(`${state.counters.length} fencing counters (more than 16,384)`);
  if (state.counters.length > attemptedSlots.size) why.push(`${state.counters.length} fencing counters for ${attemptedSlots.size} slots locked`);
  if (shared.length) why.push(`${shared.length} slot(s) with several counters (e.g. ${shared[0]!.slice(0, 3).map((c) => c.key).join(', ')}, …)`);
  if (state.misplaced.length) why.push(`${state.misplaced.length} key(s) on a node that does not serve their slot (e.g. ${state.misplaced[0]})`);
  if (state.withoutTtl.length) why.push(`${state.withoutTtl.length} key(s) without a TTL (e.g. ${state.withoutTtl.slice(0, 3).join(', ')})`);
  const below = [...maxBySlot].flatMap(([slot, max]) => {
    const value = Math.max(0, ...(countersBySlot.get(slot) ?? []).map((c) => c.value));
    return value < max ? [`slot ${slot}: counter at ${value}, token ${max} granted`] : [];
  });
  if (below.length) why.push(`${below.length} slot(s) whose counter is below a token granted from it (e.g. ${below.slice(0, 3).join('; ')})`);
  return { notes, why };
}

/**
 * The keys under `prefix` in `slot` on the node on `port` (the counter aside) that have no TTL: read right after a
 * migration moved the slot there (MIGRATE must carry every key's remaining TTL).
 */
export async function slotKeysWithoutTtl(port: number, slot: number, prefix: string): Promise<{ checked: number; without: string[] }> {
  const redis = new Redis(port, '127.0.0.1', { maxRetriesPerRequest: 3 });
  redis.on('error', () => {});
  try {
    const all = await redis.cluster('GETKEYSINSLOT', slot, 100_000);
    const mine = all.filter((k) => k.startsWith(prefix) && !k.endsWith(':fence'));
    const ttls = await Promise.all(mine.map((k) => redis.pttl(k)));
    return { checked: mine.length, without: mine.filter((_, i) => ttls[i] === -1) };
  } finally {
    redis.disconnect();
  }
}

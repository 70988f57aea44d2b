/**
 * The registry of kinds: one entry per primitive, the one place that names it. Its `kind` is the word the
 * diagnostics payloads and spans, `holdfast inspect` / `list` / `unlock --force`, the dashboard's cards and
 * `holdfast jobs` all use; `title` is the word its error messages use; `held` the kinds its held objects report.
 * A kind that lives in Redis has its store in src/kinds-redis.ts, keyed by this kind: how to find its keys (the
 * suffixes after `{name}`, taken from src/keys.ts), how to read its state (holders, hold counts, leases, queue,
 * readers, intents, permits, count: through its inspect scripts) and how to force it free. The store is kept apart
 * so that this table, which every hold's diagnostics read, stays light: no script comes with it.
 *
 * This module sits below every other (the diagnostics and the hold engine read it): it imports no client, no
 * primitive, no recipe, only the types it describes (a store, which needs a client, is declared in src/kinds-redis.ts).
 *
 * The ZooKeeper kinds live on a ZooKeeper ensemble the command line does not connect to: they are named here (their
 * diagnostics use these words) but have no store.
 *
 * A new primitive is one entry here (and, in Redis, its store); the command line, the dashboard and the channels
 * pick it up from these two tables.
 *
 * @module
 */
import type { JobInfo } from './recipes/job-info.js';

/** One holder of a primitive, as inspections show it. */
export interface HolderState {
  /** The owner id (a permit id for an expirable permit). Whoever knows it can release the hold: show its fingerprint. */
  owner: string;
  /** `fingerprint(owner)`. */
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
  /** `fingerprint(owner)`. */
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
  /** A run-once job's record (its instances by fingerprint, with their clients' labels while they run). */
  job?: JobState;
}

/** A run-once job's record as inspections show it: its instances by fingerprint, with their clients' labels. */
export interface JobState extends JobInfo {
  /** The label of the instance running it now, while its client lives. */
  runningOnLabel: string | null;
  /** The label of the instance that ran the last tick, while its client lives. */
  lastRunByLabel: string | null;
}

/** A kind of held object a registry kind hands out. */
export interface HeldKindEntry {
  /** The kind its held objects report on the diagnostics channels. */
  readonly kind: HeldKind;
  /** The word the hold engine and its error messages use for it. */
  readonly title: string;
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
  readonly held: readonly HeldKindEntry[];
  /**
   * Where it lives: `redis` (under one prefix, read and forced free by its store in src/kinds-redis.ts, which the
   * command line and the dashboard use), `zookeeper` (an ensemble the command line does not connect to), or
   * `elsewhere` (a multi-lock holds other kinds' locks; a Redlock lives on several servers, each of which holds a
   * plain lock under the same key, so the command line pointed at one server shows it as a `lock`).
   */
  readonly lives: 'redis' | 'zookeeper' | 'elsewhere';
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
  'election',
  'zk-lock',
  'zk-read-write-lock',
  'zk-semaphore',
  'zk-election',
] as const;

/** A kind's name: one of the registry's kinds (`lock`, `fair-lock`, `read-write-lock`, …; {@link KINDS} lists them). */
export type KindName = (typeof KIND_NAMES)[number];

/**
 * The kinds a held object reports on the diagnostics channels: each kind's own name, except the read-write locks,
 * whose two sides report `read-lock` / `write-lock` (`zk-read-lock` / `zk-write-lock`).
 */
export type HeldKind = Exclude<KindName, 'read-write-lock' | 'zk-read-write-lock' | 'latch' | 'job'> | 'read-lock' | 'write-lock' | 'zk-read-lock' | 'zk-write-lock';

/** The registry: every kind, in the order listings show them. */
export const KINDS: readonly KindEntry[] = [
  { kind: 'lock', title: 'lock', held: [{ kind: 'lock', title: 'lock' }], lives: 'redis' },
  { kind: 'fair-lock', title: 'fair lock', held: [{ kind: 'fair-lock', title: 'fair lock' }], lives: 'redis' },
  {
    kind: 'read-write-lock',
    title: 'read-write lock',
    held: [
      { kind: 'read-lock', title: 'read lock' },
      { kind: 'write-lock', title: 'write lock' },
    ],
    lives: 'redis',
  },
  { kind: 'permit-semaphore', title: 'expirable-permit semaphore', held: [{ kind: 'permit-semaphore', title: 'permit' }], lives: 'redis' },
  { kind: 'semaphore', title: 'semaphore', held: [{ kind: 'semaphore', title: 'semaphore' }], lives: 'redis' },
  { kind: 'latch', title: 'count-down latch', held: [], lives: 'redis' },
  { kind: 'job', title: 'run-once job', held: [], lives: 'redis' },
  // holds the locks it names: each shows up under its own kind
  { kind: 'multi-lock', title: 'multi-lock', held: [{ kind: 'multi-lock', title: 'multi-lock' }], lives: 'elsewhere' },
  // on each of its servers a Redlock is a plain lock (the same key and value): point the command line at one of them
  { kind: 'redlock', title: 'redlock', held: [{ kind: 'redlock', title: 'redlock' }], lives: 'elsewhere' },
  { kind: 'redlock-semaphore', title: 'redlock semaphore', held: [{ kind: 'redlock-semaphore', title: 'redlock semaphore' }], lives: 'elsewhere' },
  // ZooKeeper: the command line connects to Redis only
  { kind: 'election', title: 'election', held: [{ kind: 'election', title: 'leadership' }], lives: 'redis' },
  { kind: 'zk-lock', title: 'ZooKeeper lock', held: [{ kind: 'zk-lock', title: 'zk-lock' }], lives: 'zookeeper' },
  {
    kind: 'zk-read-write-lock',
    title: 'ZooKeeper read-write lock',
    held: [
      { kind: 'zk-read-lock', title: 'zk-read-lock' },
      { kind: 'zk-write-lock', title: 'zk-write-lock' },
    ],
    lives: 'zookeeper',
  },
  { kind: 'zk-semaphore', title: 'ZooKeeper semaphore', held: [{ kind: 'zk-semaphore', title: 'zk-semaphore' }], lives: 'zookeeper' },
  { kind: 'zk-election', title: 'ZooKeeper election', held: [{ kind: 'zk-election', title: 'zk-election' }], lives: 'zookeeper' },
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

const TITLE_BY_HELD: ReadonlyMap<HeldKind, string> = new Map(KINDS.flatMap((entry) => entry.held.map((h) => [h.kind, h.title] as const)));

/** The hold engine's word for a held kind (`'fair-lock'` → `'fair lock'`): what its error messages say. */
export function heldTitle(kind: HeldKind): string {
  return TITLE_BY_HELD.get(kind) ?? kind;
}

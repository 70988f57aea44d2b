/**
 * `holdfast inspect`, `holdfast list`, `holdfast unlock --force`: who holds what.
 *
 * Every kind comes from the registry of kinds (src/kinds.ts): how to find its keys with SCAN, how to read one, how to
 * force one free. A new primitive shows up in all three commands by its registry entry.
 *
 * @module
 */
import { Holdfast, STORED_KINDS, type HolderState, type KindState, type WaiterState } from '../index.js';
import { CONNECTION_HELP, CONNECTION_OPTIONS, EXIT, formatMs, durationOption, out, parse, table, UsageError } from './common.js';
import { connect } from './connect.js';

/** Which stored kind a key of `holdfast`'s prefix belongs to, with the name: `undefined` for keys no kind owns. */
export function kindOfKey(holdfast: Holdfast, key: string): { entry: (typeof STORED_KINDS)[number]; name: string } | undefined {
  const keys = holdfast.core.keys;
  const name = keys.nameOf(key);
  if (name === undefined) return undefined;
  const rest = key.slice(keys.base(name).length);
  const entry = STORED_KINDS.find((e) => e.store.suffixes.includes(rest));
  return entry === undefined ? undefined : { entry, name };
}

/** A holder as the CLI shows it (`--json`). */
export type HolderView = HolderState;
/** A waiter as the CLI shows it (`--json`). */
export type WaiterView = WaiterState;

/** One primitive as the CLI shows it (the `--json` shape of `inspect` and `list`). */
export interface LockView {
  /** The primitive's name. */
  name: string;
  /** Which primitive: a kind of the registry (`lock`, `fair-lock`, `read-write-lock`, `permit-semaphore`, `semaphore`, `latch`, `job`). */
  kind: string;
  /** Whether anyone holds it (a latch: still closed; a job: a run holds it). */
  held: boolean;
  /** The owner id of the one holder, or `null` when free or held by several (readers, permits: see `holders`). */
  owner: string | null;
  /** The label of that holder's client (its `label` option), when it set one. */
  label: string | null;
  /** That holder's hold count (reentrant acquisitions), 0 when free. */
  holdCount: number;
  /** The exclusive holder's fencing token, 0 when none. */
  token: number;
  /** ms until that holder's lease (or a latch's TTL) runs out, or `null`. */
  remainingTtl: number | null;
  /** The last fencing token minted for this name (0 for kinds that mint none). */
  lastToken: number;
  /** How many wait (a lock's waiters, a fair lock's queue, a read-write lock's waiting writers), `null` where Redis keeps no count. */
  waiters: number | null;
  /** Every holder: owner id, fingerprint, label, hold count, lease, and side (read-write lock) or permits. */
  holders: HolderView[];
  /** The waiters Redis names, head first (at most 100). */
  queue: WaiterView[];
  /** Free permits (semaphores). */
  available?: number;
  /** Permits taken (expirable-permit semaphore). */
  acquired?: number;
  /** The count (latch). */
  count?: number;
}

function viewOf(state: KindState): LockView {
  // the one holder the flat fields describe: a writer, or the only holder
  const single = state.holders.find((h) => h.side === 'write') ?? (state.holders.length === 1 ? state.holders[0] : undefined);
  return {
    name: state.name,
    kind: state.kind,
    held: state.held,
    owner: single?.owner ?? null,
    label: single?.label ?? null,
    holdCount: single?.holdCount ?? 0,
    token: state.token,
    remainingTtl: single ? single.remainingTtl : state.remainingTtl,
    lastToken: state.lastToken ?? 0,
    waiters: state.waiters,
    holders: state.holders,
    queue: state.queue,
    ...(state.available === undefined ? {} : { available: state.available }),
    ...(state.acquired === undefined ? {} : { acquired: state.acquired }),
    ...(state.count === undefined ? {} : { count: state.count }),
  };
}

/** A free name's view (the plain lock's), for `inspect --json` of a name nothing holds. */
async function freeView(holdfast: Holdfast, name: string): Promise<LockView> {
  const info = await holdfast.lock(name).inspect();
  return { name, kind: 'lock', held: false, owner: null, label: null, holdCount: 0, token: 0, remainingTtl: null, lastToken: info.lastToken, waiters: 0, holders: [], queue: [] };
}

const OPTIONS = { ...CONNECTION_OPTIONS } as const;
const LIST_OPTIONS = { ...CONNECTION_OPTIONS, match: { type: 'string' }, limit: { type: 'string' } } as const;
const UNLOCK_OPTIONS = { ...CONNECTION_OPTIONS, force: { type: 'boolean' } } as const;

export const INSPECT_HELP = `Usage: holdfast inspect <lock> [options]

Shows who holds <lock>, whatever its kind (lock, fair-lock, read-write-lock, permit-semaphore, semaphore, latch,
job): each holder's owner id and label, hold count (reentrant acquisitions), remaining lease, fencing token, the
last token minted for this name, the waiters, and a semaphore's permits or a latch's count.
Exits 0 (held or free), 69 when Redis is unreachable.

${CONNECTION_HELP}

Examples:
  holdfast inspect orders:42
  holdfast inspect --json orders:42 | jq .remainingTtl
  holdfast inspect --url redis://cache.internal:6379 --prefix billing: invoice-run`;

export const LIST_HELP = `Usage: holdfast list [options]

Lists what is held now, of every kind (SCAN over the keys, never KEYS; standalone Redis or one node).

Options:
  --match <glob>   only lock names matching this Redis glob (e.g. 'orders:*')
  --limit <n>      stop after n locks (default: 1000)
${CONNECTION_HELP}

Examples:
  holdfast list
  holdfast list --match 'orders:*' --json
  holdfast list --prefix billing:`;

export const UNLOCK_HELP = `Usage: holdfast unlock --force <lock> [options]

Frees <lock> whoever holds it, whatever its kind, and wakes its waiters: a lock or fair lock (the queue's head gets
it), a read-write lock's writer and readers, an expirable-permit semaphore's permits (given back), a latch (opened),
a run-once job's claim. A counting semaphore cannot be forced: it does not record who took its permits.
The holder is not told at once: its watchdog finds out at its next renewal (its loss signal aborts then;
\`holdfast exec\` stops its command). For operators clearing a lock left by a bug; a crashed holder's lock frees
itself within its lease anyway.
Exits 0 when something was freed, 1 when nothing was held, 64 without --force.

Options:
  --force          required: says you mean it
${CONNECTION_HELP}

Examples:
  holdfast unlock --force orders:42
  holdfast unlock --force --json nightly-report`;

async function open(values: { url?: string | undefined; prefix?: string | undefined; 'connect-timeout'?: string | undefined }, command: string) {
  const connection = await connect({ url: values.url, connectTimeout: durationOption(values['connect-timeout'], 'connect-timeout', command, 1) ?? 3000 });
  const holdfast = new Holdfast({ redis: connection.client, ...(values.prefix === undefined ? {} : { prefix: values.prefix }) });
  return {
    holdfast,
    close: async () => {
      await holdfast.close().catch(() => {});
      await connection.close();
    },
  };
}

function oneName(positionals: string[], command: string): string {
  const [name, ...extra] = positionals;
  if (name === undefined || name === '') throw new UsageError(`${command} needs a lock name`, command);
  if (extra.length > 0) throw new UsageError(`${command} takes one lock name, got ${positionals.length}`, command);
  return name;
}

/** What the DETAIL column says of a view beyond its one holder. */
function detail(v: LockView, holder: HolderView | undefined): string {
  const parts: string[] = [];
  if (holder?.side) parts.push(holder.side);
  if (holder?.permits !== undefined) parts.push(`${holder.permits} permit${holder.permits === 1 ? '' : 's'}`);
  if (v.available !== undefined && holder === undefined) parts.push(`${v.available} free${v.acquired === undefined ? '' : `, ${v.acquired} taken`}`);
  if (v.count !== undefined) parts.push(`count ${v.count}`);
  const head = v.queue[0];
  if (holder === undefined && head?.waitedMs !== undefined) parts.push(`longest wait ${formatMs(head.waitedMs)}`);
  return parts.join(', ') || '-';
}

/** One row per holder (a read-write lock's readers, an expirable semaphore's leases), one for a view without holders. */
function rows(views: LockView[]): string[][] {
  return views.flatMap((v) => {
    const holders: (HolderView | undefined)[] = v.holders.length > 0 ? v.holders : [undefined];
    return holders.map((h) => [
      v.name,
      v.kind,
      h?.owner ?? '-',
      h?.label ?? '-',
      h ? String(h.holdCount) : '-',
      formatMs(h ? h.remainingTtl : v.remainingTtl),
      h?.token !== undefined && h.token > 0 ? String(h.token) : '-',
      v.lastToken > 0 ? String(v.lastToken) : '-',
      v.waiters === null ? '-' : String(v.waiters),
      detail(v, h),
    ]);
  });
}
const HEADER = ['NAME', 'KIND', 'OWNER', 'LABEL', 'HOLDS', 'TTL', 'TOKEN', 'LAST TOKEN', 'WAITERS', 'DETAIL'];

/** Every kind's view of `name` that has something to show (held, waited for, or present). */
async function views(holdfast: Holdfast, name: string): Promise<LockView[]> {
  const states = await Promise.all(STORED_KINDS.map((k) => k.store.read(holdfast, name)));
  return states.filter((s): s is KindState => s !== undefined).map(viewOf);
}

/** `holdfast inspect <lock>`. */
export async function inspectCommand(argv: string[]): Promise<number> {
  const { values, positionals } = parse(argv, OPTIONS, 'inspect');
  if (values.help) return help(INSPECT_HELP);
  const name = oneName(positionals, 'inspect');
  const { holdfast, close } = await open(values, 'inspect');
  try {
    const found = await views(holdfast, name);
    if (found.length === 0) {
      const free = await freeView(holdfast, name);
      if (values.json) out(JSON.stringify(free));
      else out(`"${name}" is free (last token ${free.lastToken})`);
    } else if (values.json) out(JSON.stringify(found.length === 1 ? found[0] : found));
    else out(table(HEADER, rows(found)));
    return EXIT.OK;
  } finally {
    await close();
  }
}

/** Escapes Redis glob characters so that `text` matches itself only. */
export function globEscape(text: string): string {
  return text.replace(/[*?[\]\\]/g, '\\$&');
}

/** `holdfast list`. */
export async function listCommand(argv: string[]): Promise<number> {
  const { values, positionals } = parse(argv, LIST_OPTIONS, 'list');
  if (values.help) return help(LIST_HELP);
  if (positionals.length > 0) throw new UsageError(`list takes no lock name (use --match '${positionals[0]}')`, 'list');
  const limit = values.limit === undefined ? 1000 : Number(values.limit);
  if (!Number.isSafeInteger(limit) || limit < 1) throw new UsageError(`--limit must be a whole number ≥ 1, got "${values.limit}"`, 'list');
  const { holdfast, close } = await open(values, 'list');
  try {
    const found: LockView[] = [];
    const keys = holdfast.core.keys;
    // one SCAN over the prefix's `{name}` keys; the registry says which kind each key belongs to
    const pattern = `${globEscape(keys.prefix)}{${values.match ?? '*'}}:*`;
    const seen = new Map<string, (typeof STORED_KINDS)[number]>();
    const byKind = new Map<(typeof STORED_KINDS)[number], Set<string>>();
    let cursor = '0';
    do {
      const [next, batch] = (await holdfast.core.command(['SCAN', cursor, 'MATCH', pattern, 'COUNT', '1000'])) as [string, string[]];
      cursor = String(next);
      for (const key of batch) {
        const hit = kindOfKey(holdfast, key);
        if (!hit) continue;
        const id = `${hit.entry.kind}\0${hit.name}`;
        if (seen.has(id)) continue;
        seen.set(id, hit.entry);
        let names = byKind.get(hit.entry);
        if (!names) byKind.set(hit.entry, (names = new Set()));
        names.add(hit.name);
      }
    } while (cursor !== '0' && seen.size < limit);
    for (const entry of STORED_KINDS) {
      for (const name of [...(byKind.get(entry) ?? [])].sort()) {
        if (found.length >= limit) break;
        const state = await entry.store.read(holdfast, name); // it may have been released since the SCAN
        if (state) found.push(viewOf(state));
      }
    }
    if (values.json) out(JSON.stringify(found));
    else if (found.length === 0) out('no locks held');
    else out(table(HEADER, rows(found)));
    return EXIT.OK;
  } finally {
    await close();
  }
}

/** `holdfast unlock --force <lock>`. */
export async function unlockCommand(argv: string[]): Promise<number> {
  const { values, positionals } = parse(argv, UNLOCK_OPTIONS, 'unlock');
  if (values.help) return help(UNLOCK_HELP);
  const name = oneName(positionals, 'unlock');
  if (!values.force) throw new UsageError(`unlock deletes the lock whoever holds it: add --force to mean it (holdfast unlock --force ${name})`, 'unlock');
  const { holdfast, close } = await open(values, 'unlock');
  try {
    const before = await views(holdfast, name);
    let unlocked = false;
    const cannot: string[] = [];
    for (const { kind, store } of STORED_KINDS) {
      if (store.forceFree) {
        if (await store.forceFree(holdfast, name)) unlocked = true;
      } else if (before.some((v) => v.kind === kind) && store.cannotForce) cannot.push(`${kind}: ${store.cannotForce}`);
    }
    const was = before.filter((v) => v.held);
    if (values.json) out(JSON.stringify({ name, unlocked, was: was.length === 0 ? null : was.length === 1 ? was[0] : was }));
    else if (unlocked) {
      const first = was[0];
      const whom = first === undefined ? '' : first.owner !== null ? ` (${first.kind}, was held by ${first.owner}${first.token > 0 ? `, token ${first.token}` : ''})` : ` (${first.kind})`;
      out(`unlocked "${name}"${whom}`);
    } else out(cannot.length > 0 ? `"${name}" was not freed: ${cannot.join('; ')}` : `"${name}" was not locked`);
    return unlocked ? EXIT.OK : EXIT.NOT_FOUND;
  } finally {
    await close();
  }
}

function help(text: string): number {
  out(text);
  return EXIT.OK;
}

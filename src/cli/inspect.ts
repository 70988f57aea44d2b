/**
 * `holdfast inspect`, `holdfast list`, `holdfast unlock --force`: who holds what.
 *
 * Each kind of lock the command knows is one entry of {@link LOCK_KINDS}: how to find its keys with SCAN, how to
 * read one, how to delete one. A new primitive (the fair lock, the read-write lock…) shows up in all three commands
 * by adding its entry there.
 *
 * @module
 */
import { Holdfast } from '../index.js';
import { CONNECTION_HELP, CONNECTION_OPTIONS, EXIT, formatMs, durationOption, out, parse, table, UsageError } from './common.js';
import { connect } from './connect.js';

/** One lock as the CLI shows it (the `--json` shape of `inspect` and `list`). */
export interface LockView {
  /** The lock's name. */
  name: string;
  /** Which primitive: `lock` (the reentrant lock), later `fair-lock`, … */
  kind: string;
  /** Whether anyone holds it. */
  held: boolean;
  /** The owner id, or `null` when free. */
  owner: string | null;
  /** The owner's hold count (reentrant acquisitions), 0 when free. */
  holdCount: number;
  /** The current holder's fencing token, 0 when free. */
  token: number;
  /** ms until the lease runs out, or `null` when free. */
  remainingTtl: number | null;
  /** The last fencing token ever minted for this name. */
  lastToken: number;
  /** How many wait in line (fair locks), or `null` for kinds without a queue in Redis. */
  waiters: number | null;
}

/** How the CLI finds, reads and deletes one kind of lock. */
export interface LockKind {
  /** Shown in the KIND column. */
  kind: string;
  /** The suffix of this kind's main key after `{name}` (see src/keys.ts), e.g. `:lock`: what SCAN matches. */
  keySuffix: string;
  /** Reads the lock; a free lock is returned with `held: false`. */
  inspect(holdfast: Holdfast, name: string): Promise<LockView>;
  /** Deletes the lock whoever holds it; true if something was deleted. */
  forceUnlock(holdfast: Holdfast, name: string): Promise<boolean>;
}

/**
 * The kinds of lock the CLI knows. HOOK for the fair lock (and every later primitive): add an entry here, e.g.
 * `{ kind: 'fair-lock', keySuffix: ':fair', inspect: (h, n) => …waiters from its queue…, forceUnlock: … }`.
 */
export const LOCK_KINDS: LockKind[] = [
  {
    kind: 'lock',
    keySuffix: ':lock',
    async inspect(holdfast, name) {
      const info = await holdfast.lock(name).inspect();
      return {
        name,
        kind: 'lock',
        held: info.owner !== null,
        owner: info.owner,
        holdCount: info.holdCount,
        token: info.token,
        remainingTtl: info.remainingTtl,
        lastToken: info.lastToken,
        waiters: null,
      };
    },
    forceUnlock: (holdfast, name) => holdfast.lock(name).forceUnlock(),
  },
];

const OPTIONS = { ...CONNECTION_OPTIONS } as const;
const LIST_OPTIONS = { ...CONNECTION_OPTIONS, match: { type: 'string' }, limit: { type: 'string' } } as const;
const UNLOCK_OPTIONS = { ...CONNECTION_OPTIONS, force: { type: 'boolean' } } as const;

export const INSPECT_HELP = `Usage: holdfast inspect <lock> [options]

Shows who holds the lock <lock>: owner id, hold count (reentrant acquisitions), remaining lease, the holder's
fencing token, the last token minted for this name, and the waiters in line (fair locks).
Exits 0 (held or free), 69 when Redis is unreachable.

${CONNECTION_HELP}

Examples:
  holdfast inspect orders:42
  holdfast inspect --json orders:42 | jq .remainingTtl
  holdfast inspect --url redis://cache.internal:6379 --prefix billing: invoice-run`;

export const LIST_HELP = `Usage: holdfast list [options]

Lists the locks that are held now (SCAN over the keys, never KEYS; standalone Redis or one node).

Options:
  --match <glob>   only lock names matching this Redis glob (e.g. 'orders:*')
  --limit <n>      stop after n locks (default: 1000)
${CONNECTION_HELP}

Examples:
  holdfast list
  holdfast list --match 'orders:*' --json
  holdfast list --prefix billing:`;

export const UNLOCK_HELP = `Usage: holdfast unlock --force <lock> [options]

Deletes the lock <lock> whoever holds it, and wakes its waiters. The holder is not told at once: its watchdog
finds out at its next renewal (its loss signal aborts then; \`holdfast exec\` stops its command). For operators
clearing a lock left by a bug; a crashed holder's lock frees itself within its lease anyway.
Exits 0 when a lock was deleted, 1 when there was none, 64 without --force.

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

function rows(views: LockView[]): string[][] {
  return views.map((v) => [
    v.name,
    v.kind,
    v.owner ?? '-',
    String(v.holdCount),
    formatMs(v.remainingTtl),
    v.held ? String(v.token) : '-',
    String(v.lastToken),
    v.waiters === null ? '-' : String(v.waiters),
  ]);
}
const HEADER = ['NAME', 'KIND', 'OWNER', 'HOLDS', 'TTL', 'TOKEN', 'LAST TOKEN', 'WAITERS'];

/** Every kind's view of `name`: the held ones, or the plain lock's (free) view when none is held. */
async function views(holdfast: Holdfast, name: string): Promise<LockView[]> {
  const all = await Promise.all(LOCK_KINDS.map((k) => k.inspect(holdfast, name)));
  const held = all.filter((v) => v.held || (v.waiters ?? 0) > 0);
  return held.length > 0 ? held : all.slice(0, 1);
}

/** `holdfast inspect <lock>`. */
export async function inspectCommand(argv: string[]): Promise<number> {
  const { values, positionals } = parse(argv, OPTIONS, 'inspect');
  if (values.help) return help(INSPECT_HELP);
  const name = oneName(positionals, 'inspect');
  const { holdfast, close } = await open(values, 'inspect');
  try {
    const found = await views(holdfast, name);
    if (values.json) out(JSON.stringify(found.length === 1 ? found[0] : found));
    else if (!found.some((v) => v.held)) out(`"${name}" is free (last token ${found[0]?.lastToken ?? 0})`);
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
    for (const kind of LOCK_KINDS) {
      const pattern = `${globEscape(keys.prefix)}{${values.match ?? '*'}}${globEscape(kind.keySuffix)}`;
      const names = new Set<string>();
      let cursor = '0';
      do {
        const [next, batch] = (await holdfast.core.command(['SCAN', cursor, 'MATCH', pattern, 'COUNT', '1000'])) as [string, string[]];
        cursor = String(next);
        for (const key of batch) {
          const name = keys.nameOf(key);
          if (name !== undefined && key === keys.base(name) + kind.keySuffix) names.add(name);
        }
      } while (cursor !== '0' && names.size < limit);
      for (const name of [...names].sort()) {
        if (found.length >= limit) break;
        const view = await kind.inspect(holdfast, name);
        if (view.held || (view.waiters ?? 0) > 0) found.push(view); // it may have been released since the SCAN
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
    for (const kind of LOCK_KINDS) {
      if (await kind.forceUnlock(holdfast, name)) unlocked = true;
    }
    const was = before.filter((v) => v.held);
    if (values.json) out(JSON.stringify({ name, unlocked, was: was.length === 0 ? null : was.length === 1 ? was[0] : was }));
    else if (unlocked) out(`unlocked "${name}"${was[0] ? ` (was held by ${was[0].owner ?? '?'}, token ${was[0].token})` : ''}`);
    else out(`"${name}" was not locked`);
    return unlocked ? EXIT.OK : EXIT.NOT_FOUND;
  } finally {
    await close();
  }
}

function help(text: string): number {
  out(text);
  return EXIT.OK;
}

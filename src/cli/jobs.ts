/**
 * `holdfast jobs`: the scheduled jobs under a prefix (run-once jobs of the scheduler and of the node-cron, `cron`
 * and NestJS adapters), read from their records in Redis: the last tick run, by which instance (its fingerprint,
 * never an owner id), how long it took, its error, and whether a claim holds the job now.
 *
 * @module
 */
import { Holdfast } from '../holdfast.js';
import { scripts } from '../lua/scripts.gen.js';
import { CONNECTION_HELP, CONNECTION_OPTIONS, EXIT, formatMs, msOption, out, parse, table, UsageError } from './common.js';
import { connect } from './connect.js';
import { globEscape } from './inspect.js';

/** One job as `holdfast jobs --json` shows it. */
export interface JobView {
  /** The job's name. */
  name: string;
  /** Its schedule as last claimed: a cron expression, or the adapter (`node-cron`, `nestjs`) when unknown. */
  schedule: string | null;
  /** The latest tick claimed (ISO time), run or running. */
  lastClaimedTick: string | null;
  /** The tick of the last finished run (ISO time). */
  lastRunTick: string | null;
  /** The fingerprint of the instance that made the last finished run. */
  lastRunBy: string | null;
  /** How long the last finished run took, in ms. */
  lastRunMs: number | null;
  /** When the last run finished (ISO time, Redis' clock). */
  lastRunFinishedAt: string | null;
  /** The last run's error message, `null` when it succeeded. */
  lastError: string | null;
  /** Failed runs in a row (0 after a success). */
  failuresInARow: number;
  /** Runs finished while the record was kept. */
  runs: number;
  /** Whether a claim holds the job now: a run is in progress (or its instance died within `lockAtMostFor`). */
  running: boolean;
  /** The fingerprint of the instance running it now. */
  runningOn: string | null;
  /** How long the run in progress has been going, in ms. */
  runningForMs: number | null;
  /** ms until the job can be claimed again (`lockAtMostFor` of a run in progress, or `lockAtLeastFor` after one), 0 when free. */
  lockedForMs: number;
}

const OPTIONS = { ...CONNECTION_OPTIONS, match: { type: 'string' }, limit: { type: 'string' } } as const;

export const JOBS_HELP = `Usage: holdfast jobs [options]

Lists the run-once jobs scheduled under a prefix (holdfast's scheduler and its node-cron, cron and NestJS
adapters), from their records in Redis: the last tick run, by which instance (a short fingerprint: the
scheduler's \`fingerprint\`), how long it took, its error, and whether a run holds the job now. A job shows up once
a tick of it was claimed, and is forgotten 7 days after its last one. SCAN over the keys, never KEYS.

Options:
  --match <glob>   only job names matching this Redis glob (e.g. 'reports:*')
  --limit <n>      stop after n jobs (default: 1000)
${CONNECTION_HELP}

Examples:
  holdfast jobs
  holdfast jobs --match 'billing:*' --json | jq '.[] | select(.lastError != null)'`;

/** Reads one job's record; `undefined` when there is none (it expired since the SCAN). */
export async function readJob(holdfast: Holdfast, name: string): Promise<JobView | undefined> {
  const key = holdfast.core.keys.job(name);
  const [now, ...flat] = (await holdfast.core.run(scripts['scheduler/inspect'], [key], [])) as [number, ...string[]];
  if (flat.length === 0) return undefined;
  const f = new Map<string, string>();
  for (let i = 0; i + 1 < flat.length; i += 2) f.set(String(flat[i]), String(flat[i + 1]));
  const num = (k: string): number | null => (f.get(k) === undefined || f.get(k) === '' ? null : Number(f.get(k)));
  const iso = (k: string): string | null => {
    const ms = num(k);
    return ms === null ? null : new Date(ms).toISOString();
  };
  const lockedUntil = num('u') ?? 0;
  const running = f.has('o') && lockedUntil > Number(now);
  const started = num('s');
  return {
    name,
    schedule: f.get('c') ?? null,
    lastClaimedTick: iso('t'),
    lastRunTick: iso('rt'),
    lastRunBy: f.get('rf') || null,
    lastRunMs: num('rd'),
    lastRunFinishedAt: iso('rx'),
    lastError: f.get('re') || null,
    failuresInARow: num('ec') ?? 0,
    runs: num('rn') ?? 0,
    running,
    runningOn: running ? f.get('f') || null : null,
    runningForMs: running && started !== null ? Math.max(0, Number(now) - started) : null,
    lockedForMs: Math.max(0, lockedUntil - Number(now)),
  };
}

function rows(views: JobView[]): string[][] {
  return views.map((v) => [
    v.name,
    v.schedule ?? '-',
    v.lastRunTick ?? '-',
    v.lastRunBy ?? '-',
    formatMs(v.lastRunMs),
    v.lastRunTick === null ? '-' : v.lastError === null ? 'ok' : `failed${v.failuresInARow > 1 ? ` ×${v.failuresInARow}` : ''}: ${v.lastError}`,
    v.running ? `running on ${v.runningOn ?? '?'} for ${formatMs(v.runningForMs)}` : v.lockedForMs > 0 ? `locked ${formatMs(v.lockedForMs)}` : '-',
  ]);
}
const HEADER = ['NAME', 'SCHEDULE', 'LAST RUN (TICK)', 'BY', 'TOOK', 'RESULT', 'NOW'];

/** `holdfast jobs`. */
export async function jobsCommand(argv: string[]): Promise<number> {
  const { values, positionals } = parse(argv, OPTIONS, 'jobs');
  if (values.help) {
    out(JOBS_HELP);
    return EXIT.OK;
  }
  if (positionals.length > 0) throw new UsageError(`jobs takes no job name (use --match '${positionals[0]}')`, 'jobs');
  const limit = values.limit === undefined ? 1000 : Number(values.limit);
  if (!Number.isSafeInteger(limit) || limit < 1) throw new UsageError(`--limit must be a whole number ≥ 1, got "${values.limit}"`, 'jobs');
  const connection = await connect({ url: values.url, connectTimeout: msOption(values['connect-timeout'], 'connect-timeout', 'jobs', 1) ?? 3000 });
  const holdfast = new Holdfast({ redis: connection.client, ...(values.prefix === undefined ? {} : { prefix: values.prefix }) });
  try {
    const keys = holdfast.core.keys;
    const pattern = `${globEscape(keys.prefix)}{${values.match ?? '*'}}:job`;
    const names = new Set<string>();
    let cursor = '0';
    do {
      const [next, batch] = (await holdfast.core.command(['SCAN', cursor, 'MATCH', pattern, 'COUNT', '1000'])) as [string, string[]];
      cursor = String(next);
      for (const key of batch) {
        const name = keys.nameOf(key);
        if (name !== undefined && key === keys.job(name)) names.add(name);
      }
    } while (cursor !== '0' && names.size < limit);
    const found: JobView[] = [];
    for (const name of [...names].sort().slice(0, limit)) {
      const view = await readJob(holdfast, name);
      if (view) found.push(view);
    }
    if (values.json) out(JSON.stringify(found));
    else if (found.length === 0) out('no jobs recorded');
    else out(table(HEADER, rows(found)));
    return EXIT.OK;
  } finally {
    await holdfast.close().catch(() => {});
    await connection.close();
  }
}

/**
 * `holdfast jobs`: the scheduled jobs under a prefix (run-once jobs of the scheduler and of the node-cron, `cron`
 * and NestJS adapters), read from their records in Redis: the last tick run, by which instance (its fingerprint,
 * never an owner id), how long it took, its error, and whether a claim holds the job now.
 *
 * @module
 */
import { Holdfast, type JobInfo } from '../index.js';
import { CONNECTION_HELP, CONNECTION_OPTIONS, EXIT, formatMs, durationOption, out, parse, table, UsageError } from './common.js';
import { connect } from './connect.js';
import { globEscape } from './inspect.js';

const OPTIONS = { ...CONNECTION_OPTIONS, match: { type: 'string' }, limit: { type: 'string' } } as const;

export const JOBS_HELP = `Usage: holdfast jobs [options]

Lists the run-once jobs scheduled under a prefix (holdfast's scheduler and its node-cron, cron and NestJS
adapters), from their records in Redis: the last tick run, by which instance (a short fingerprint: the
scheduler's \`fingerprint\`, with its client's label while it runs), how long it took, its error, and whether a run holds the job now. A job shows up once
a tick of it was claimed, and is forgotten 7 days after its last one. SCAN over the keys, never KEYS.

Options:
  --match <glob>   only job names matching this Redis glob (e.g. 'reports:*')
  --limit <n>      stop after n jobs (default: 1000)
${CONNECTION_HELP}

Examples:
  holdfast jobs
  holdfast jobs --match 'billing:*' --json | jq '.[] | select(.lastError != null)'`;

/** A job as `holdfast jobs --json` shows it: its record, and the labels of the instances in it (their `label` option). */
export type JobView = JobInfo & {
  /** The label of the instance that made the last finished run, while that client is alive and set one. */
  lastRunByLabel: string | null;
  /** The label of the instance running it now, when it set one. */
  runningOnLabel: string | null;
};

const withLabel = (fp: string | null, label: string | null): string => (fp === null ? '-' : label === null ? fp : `${fp} (${label})`);

function rows(views: JobView[]): string[][] {
  return views.map((v) => [
    v.name,
    v.schedule ?? '-',
    v.lastRunTick ?? '-',
    withLabel(v.lastRunBy, v.lastRunByLabel),
    formatMs(v.lastRunMs),
    v.lastRunTick === null ? '-' : v.lastError === null ? 'ok' : `failed${v.failuresInARow > 1 ? ` ×${v.failuresInARow}` : ''}: ${v.lastError}`,
    v.running ? `running on ${withLabel(v.runningOn, v.runningOnLabel)} for ${formatMs(v.runningForMs)}` : v.lockedForMs > 0 ? `locked ${formatMs(v.lockedForMs)}` : '-',
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
  const connection = await connect({ url: values.url, connectTimeout: durationOption(values['connect-timeout'], 'connect-timeout', 'jobs', 1) ?? 3000 });
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
    const labels = new Map<string, Promise<string | null>>();
    // an instance's fingerprint is that of its client id: its label key is found by it (see the `label` client option)
    const labelOf = (fp: string | null): Promise<string | null> => {
      if (fp === null) return Promise.resolve(null);
      let label = labels.get(fp);
      if (!label) {
        const key = keys.clientLabel(fp);
        labels.set(fp, (label = holdfast.core.command(['GET', key], key).then((v) => (typeof v === 'string' ? v : null))));
      }
      return label;
    };
    for (const name of [...names].sort().slice(0, limit)) {
      const view = await holdfast.inspectJob(name);
      if (view) found.push({ ...view, lastRunByLabel: await labelOf(view.lastRunBy), runningOnLabel: await labelOf(view.runningOn) });
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

/**
 * `holdfast demo`: five common Redis lock schemes and holdfast, side by side, each run by several
 * worker processes incrementing one shared counter in Redis, under the same three injected faults. Prints what
 * broke (a table), writes a timeline picture of who held the lock when.
 *
 * @module
 */
import { fork, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { createInterface } from 'node:readline';
import { CliError, EXIT, out, parse, table, UsageError, warn } from '../common.js';
import { redact } from '../connect.js';
import { analyze, verdict, type DemoEvent, type RunResult } from './analyze.js';
import { findRedis, type DemoRedis } from './redis.js';
import { FAULT_IDS, FAULTS, SCHEME_IDS, SCHEMES, type FaultId, type SchemeId } from './schemes.js';
import { timelineSvg } from './svg.js';
import type { RunOrder } from './worker.js';

/**
 * The demo's clock, scaled down so a run takes seconds: a 400 ms lease stands for the usual 10 s, a 10 ms retry sleep
 * for the usual 100 ms.
 */
export const TIMING = {
  /** The lock's lease (the expiring schemes' TTL; holdfast's watchdog lease, renewed every lease/3). */
  leaseMs: 400,
  /** The five schemes' sleep between attempts. */
  retryMs: 10,
  /** How long the pause fault stops the worker. */
  pauseMs: 1000,
  /** How long the slow-release fault delays each release of the faulty worker, from the fault on. */
  slowMs: 700,
  /** The work inside the critical section (long enough that the lock is busy most of the time, as under load). */
  workMs: 15,
  /** The fault strikes at the faulty worker's first grant this long into the run. */
  faultAfterMs: 250,
  /** How long each scheme runs under each fault. */
  durationMs: 1800,
};

export const DEMO_HELP = `Usage: holdfast demo [options]

Runs five common ways to build a lock on Redis, each fixing the previous one's best-known flaw, and holdfast,
side by side: for each, ${'N'} worker processes add 1 to a shared counter in Redis under the lock, while
one worker meets a fault. Then it shows what broke: deadlocks, lost updates, locks deleted from under another
worker, and the stale writes holdfast's fencing token refused; and draws who held the lock when.

The schemes (each sends exactly these commands):
${SCHEME_IDS.map((id) => `  ${id.padEnd(13)} lock: ${SCHEMES[id].lock}; unlock: ${SCHEMES[id].unlock}`).join('\n')}

The faults:
${FAULT_IDS.map((id) => `  ${id.padEnd(13)} ${FAULTS[id]}`).join('\n')}

Redis: --url, else $REDIS_URL, else 127.0.0.1:6379, else a throwaway redis-server from PATH on a free port,
else holdfast's in-process backend (holdfast/memory), served to the workers on a loopback port.
The demo only touches keys under "holdfast-demo:<random>:" and deletes them afterwards.

Options:
  --url <url>          Redis URL (password: in the URL, $REDISCLI_AUTH or $HOLDFAST_PASSWORD)
  --workers <n>        worker processes per run (default: 4, 2–8)
  --only <list>        comma-separated schemes and/or faults to run (e.g. same-value,holdfast or pause)
  --duration <ms>      how long each run lasts (default: ${TIMING.durationMs})
  --out <dir>          where to write demo-timeline.svg, demo-results.json, demo-table.md (default: demo-output)
  --json               print the results as JSON instead of the table
  --verbose            stack traces on errors
  -h, --help           this help

Takes about ${Math.round(((TIMING.durationMs + 250) * SCHEME_IDS.length * FAULT_IDS.length) / 1000 + 3)} s.

Examples:
  npm run demo
  holdfast demo --only get-then-del,lua-delete,holdfast --only pause
  REDIS_URL=redis://127.0.0.1:6380 holdfast demo --json > demo.json`;

const OPTIONS = {
  url: { type: 'string' },
  workers: { type: 'string' },
  only: { type: 'string', multiple: true },
  duration: { type: 'string' },
  out: { type: 'string' },
  json: { type: 'boolean' },
  verbose: { type: 'boolean' },
  help: { type: 'boolean', short: 'h' },
} as const;

const epoch = () => performance.timeOrigin + performance.now();

type WorkerMessage = { type: 'ready'; w: string } | { type: 'done' | 'crashed'; w: string; events: DemoEvent[] };

/** One worker process and a way to wait for its next message. */
class WorkerProcess {
  readonly child: ChildProcess;
  readonly ready: Promise<void>;
  #waiting: ((m: WorkerMessage | null) => void) | undefined;
  #queue: (WorkerMessage | null)[] = [];

  constructor(
    readonly id: string,
    url: string,
  ) {
    this.child = fork(process.argv[1]!, ['__demo-worker', id], {
      stdio: ['ignore', 'pipe', 'inherit', 'ipc'],
      env: { ...process.env, HOLDFAST_DEMO_URL: url },
    });
    createInterface({ input: this.child.stdout! }).on('line', (line) => {
      let message: WorkerMessage;
      try {
        message = JSON.parse(line) as WorkerMessage;
      } catch {
        return; // not ours
      }
      this.#push(message);
    });
    // 'close', not 'exit': a crashed worker's last lines may still be in the pipe when it exits
    this.child.once('close', () => this.#push(null));
    this.ready = this.next(30_000).then((m) => {
      if (m?.type !== 'ready') throw new CliError(`demo worker ${id} did not start`, EXIT.INTERNAL);
    });
    this.ready.catch(() => {}); // a spare may never be awaited; whoever awaits it still sees the error
  }

  #push(m: WorkerMessage | null): void {
    const waiting = this.#waiting;
    if (waiting) {
      this.#waiting = undefined;
      waiting(m);
    } else this.#queue.push(m);
  }

  /** The next message; `null` when the process exited or `timeoutMs` passed. */
  next(timeoutMs: number): Promise<WorkerMessage | null> {
    if (this.#queue.length > 0) return Promise.resolve(this.#queue.shift()!);
    return new Promise((resolve) => {
      const timer = setTimeout(() => {
        this.#waiting = undefined;
        resolve(null);
      }, timeoutMs);
      this.#waiting = (m) => {
        clearTimeout(timer);
        resolve(m);
      };
    });
  }

  send(order: RunOrder | { type: 'exit' }): void {
    this.child.send(order);
  }

  kill(): void {
    if (this.child.exitCode === null && this.child.signalCode === null) this.child.kill('SIGKILL');
  }
}

/** Parses the options, runs every scheme under every fault, prints and writes the results. */
export async function demoCommand(argv: string[]): Promise<number> {
  const { values, positionals } = parse(argv, OPTIONS, 'demo');
  if (values.help) {
    out(DEMO_HELP.replace('N worker', '4 worker'));
    return EXIT.OK;
  }
  if (positionals.length > 0) throw new UsageError(`demo takes no arguments, got "${positionals[0]}"`, 'demo');
  const workers = values.workers === undefined ? 4 : Number(values.workers);
  if (!Number.isInteger(workers) || workers < 2 || workers > 8) throw new UsageError(`--workers must be 2–8, got "${values.workers}"`, 'demo');
  const duration = values.duration === undefined ? TIMING.durationMs : Number(values.duration);
  if (!Number.isInteger(duration) || duration < 500 || duration > 60_000) {
    throw new UsageError(`--duration must be 500–60000 ms, got "${values.duration}"`, 'demo');
  }
  const only = (values.only ?? []).flatMap((s) => s.split(',')).map((s) => s.trim()).filter(Boolean);
  for (const o of only) {
    if (!(SCHEME_IDS as readonly string[]).includes(o) && !(FAULT_IDS as readonly string[]).includes(o)) {
      throw new UsageError(`--only: unknown scheme or fault "${o}" (schemes: ${SCHEME_IDS.join(', ')}; faults: ${FAULT_IDS.join(', ')})`, 'demo');
    }
  }
  const schemes = SCHEME_IDS.filter((s) => !only.some((o) => (SCHEME_IDS as readonly string[]).includes(o)) || only.includes(s));
  const faults = FAULT_IDS.filter((f) => !only.some((o) => (FAULT_IDS as readonly string[]).includes(o)) || only.includes(f));
  const outDir = resolve(values.out ?? 'demo-output');

  const redis = await findRedis(values.url);
  try {
    const results = await runAll(redis, { workers, duration, schemes, faults, log: values.json ? () => {} : out });
    mkdirSync(outDir, { recursive: true });
    const svgPath = join(outDir, 'demo-timeline.svg');
    writeFileSync(svgPath, timelineSvg(results, { leaseMs: TIMING.leaseMs }));
    writeFileSync(join(outDir, 'demo-results.json'), JSON.stringify({ timing: { ...TIMING, durationMs: duration }, workers, results }, null, 1) + '\n');
    writeFileSync(join(outDir, 'demo-table.md'), markdownTable(results) + '\n');
    if (values.json) {
      out(JSON.stringify({ timing: { ...TIMING, durationMs: duration }, workers, results: results.map(summary) }, null, 1));
    } else {
      out('');
      out(textTable(results));
      out('');
      out('STUCK: the lock outlived its crashed holder for good (no TTL); LOST: counter writes Redis accepted that the');
      out("counter does not show; DELETED: releases that deleted a lock another worker held; TWO HOLDERS: time during");
      out('which two or more workers were in their critical section; STALE REFUSED: accesses holdfast\'s fenced counter refused (older token).');
      out('Under a pause longer than the lease every lock has TWO HOLDERS for a while (a stopped process cannot renew): with');
      out("holdfast that is \"ok\" because the paused holder's late write carried an old fencing token and was refused.");
      out(`timeline: ${svgPath}`);
    }
    return EXIT.OK;
  } finally {
    await redis.connection.close();
    await redis.stop();
  }
}

interface RunAllOptions {
  workers: number;
  duration: number;
  schemes: readonly SchemeId[];
  faults: readonly FaultId[];
  log: (line: string) => void;
}

/** Runs each scheme under each fault with one pool of worker processes (a crashed worker is replaced). */
export async function runAll(redis: DemoRedis, opts: RunAllOptions): Promise<RunResult[]> {
  const tag = `holdfast-demo:${randomBytes(4).toString('hex')}:`;
  const transport = redis.connection.transport;
  opts.log(
    `holdfast demo: five common Redis lock schemes and holdfast, ${opts.workers} worker processes each, ` +
      (redis.origin === 'in-process'
        ? `on holdfast's in-process backend (holdfast/memory, ${redis.note ?? 'no Redis found'}), served to the workers at ${redis.url}`
        : `on Redis at ${redact(redis.url)} (${redis.origin})`),
  );
  opts.log(`lease ${TIMING.leaseMs} ms; faults: crash, pause ${TIMING.pauseMs} ms, slow release ${TIMING.slowMs} ms; ${opts.duration} ms per run`);
  const pool: WorkerProcess[] = [];
  for (let i = 0; i < opts.workers; i++) pool.push(new WorkerProcess(`w${i}`, redis.url));
  // a spare, started ahead, takes a crashed worker's place at once
  let spare: WorkerProcess | undefined = new WorkerProcess('w0', redis.url);
  const results: RunResult[] = [];
  try {
    await Promise.all([...pool, spare].map((w) => w.ready));
    for (const scheme of opts.schemes) {
      for (const fault of opts.faults) {
        const prefix = `${tag}${scheme}:${fault}:`;
        const keys = { lock: `${prefix}lock`, audit: `${prefix}audit`, counter: `${prefix}counter`, fence: `${prefix}fence` };
        await transport.command(['SET', keys.counter, '0'], keys.counter);
        const startAt = epoch() + 150;
        const endAt = startAt + opts.duration;
        const { durationMs: _d, ...timing } = TIMING;
        const order = { type: 'run', scheme, fault, keys, prefix, ...timing, startAt, endAt } as const;
        pool.forEach((w, i) => w.send({ ...order, faulty: i === 0 }));
        const events: DemoEvent[] = [];
        await Promise.all(
          pool.map(async (w, i) => {
            const m = await w.next(endAt - epoch() + 10_000);
            if (m && m.type !== 'ready') events.push(...m.events);
            if (m?.type === 'done') return;
            if (!m) warn(`demo worker ${w.id} did not report on ${scheme}/${fault}; replacing it`);
            w.kill();
            if (i === 0 && spare) {
              pool[i] = spare;
              spare = new WorkerProcess('w0', redis.url);
            } else pool[i] = new WorkerProcess(w.id, redis.url);
            await pool[i].ready;
          }),
        );
        const counter = Number((await transport.command(['GET', keys.counter], keys.counter)) ?? 0);
        const lockKey = scheme === 'holdfast' ? `${prefix}{counter}:lock` : keys.lock;
        const lockPttl = Number(await transport.command(['PTTL', lockKey], lockKey));
        const result = analyze(events, { scheme, fault, workers: opts.workers, startAt, endAt, counter, lockPttl });
        results.push(result);
        for (const f of result.failures) warn(`${scheme}/${fault}: worker ${f}`);
        opts.log(`  ${scheme.padEnd(13)} ${fault.padEnd(13)} ${verdict(result)}`);
        await deleteKeys(redis, prefix);
      }
    }
  } finally {
    if (spare) pool.push(spare);
    for (const w of pool) {
      try {
        w.send({ type: 'exit' });
      } catch {
        /* gone */
      }
    }
    await Promise.all(
      pool.map(async (w) => {
        if (w.child.exitCode === null && w.child.signalCode === null) {
          const exited = new Promise((r) => w.child.once('exit', r));
          const timer = setTimeout(() => w.kill(), 3000);
          await exited;
          clearTimeout(timer);
        }
      }),
    );
    await deleteKeys(redis, tag).catch(() => {});
  }
  return results;
}

async function deleteKeys(redis: DemoRedis, prefix: string): Promise<void> {
  const transport = redis.connection.transport;
  const pattern = prefix.replace(/[*?[\]\\]/g, '\\$&') + '*';
  let cursor = '0';
  do {
    const [next, keys] = (await transport.command(['SCAN', cursor, 'MATCH', pattern, 'COUNT', '1000'])) as [string, string[]];
    cursor = String(next);
    if (keys.length > 0) await transport.command(['DEL', ...keys]);
  } while (cursor !== '0');
}

/** The figures of one run without the timeline's spans. */
export function summary(r: RunResult): Omit<RunResult, 'spans' | 'overlapSpans' | 'marks'> & { verdict: string } {
  const { spans: _s, overlapSpans: _o, marks: _m, ...rest } = r;
  return { ...rest, verdict: verdict(r) };
}

function stuckCell(r: RunResult): string {
  if (r.crashedAt === null) return '-';
  if (r.stuck) return 'YES (no TTL)';
  return r.recoveredAfterMs === null ? 'no (not retaken)' : `no (${r.recoveredAfterMs} ms)`;
}

function cells(r: RunResult): string[] {
  return [
    r.scheme,
    r.fault,
    stuckCell(r),
    String(r.lostUpdates),
    String(r.deletedOthers),
    r.overlapMs > 0 ? `${r.overlapMs} ms` : '0',
    r.scheme === 'holdfast' ? String(r.staleRejected) : '-',
    `${r.writes}/${r.counter}`,
    verdict(r),
  ];
}
const HEADER = ['SCHEME', 'FAULT', 'STUCK', 'LOST', 'DELETED', 'TWO HOLDERS', 'STALE REFUSED', 'WRITES/COUNTER', 'VERDICT'];

function textTable(results: RunResult[]): string {
  return table(HEADER, results.map(cells));
}

/** The results as a Markdown table (for the README). */
export function markdownTable(results: RunResult[]): string {
  const header = [
    'scheme',
    'fault',
    'stuck (deadlock)',
    'lost updates',
    "others' locks deleted",
    'time with two holders',
    'stale writes refused',
    'writes / counter',
    'verdict',
  ];
  const rows = results.map(cells);
  return [`| ${header.join(' | ')} |`, `|${header.map(() => '---').join('|')}|`, ...rows.map((r) => `| ${r.join(' | ')} |`)].join('\n');
}

/**
 * `npm run safety` — runs the fault scenarios against real redis-server processes and client worker processes,
 * checks every history and prints (and writes to `results/safety-<date>.md`) a table per scenario.
 *
 *   npm run safety                      every scenario (~6 min)
 *   npm run safety -- --quick           the seeded CI subset (~61 s on a loaded 2-core VM, plus 10–13 s for the Cluster scenario)
 *   npm run safety -- --seed 7 --only holder-paused,crashed-holder
 *   npm run safety -- --keep            keep the JSONL histories (always kept when something fails)
 *
 * Exit status 1 when any scenario shows a bug, a stale write accepted by the fenced resource, a lost fenced update,
 * a broken liveness bound, or (for a self-test) no expected violation at all.
 *
 * @module
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';
import { Redis } from 'ioredis';
import { Keys, slotOf } from '../../src/keys.js';
import { RedisCluster } from '../support/cluster.js';
import { FaultProxy } from '../support/fault-proxy.js';
import { WorkerProcess } from '../support/processes.js';
import { RedisServer } from '../support/redis-server.js';
import { checkHistory, checkResource, type HistoryReport, type ResourceReport } from './checker.js';
import { addFillers, checkCluster, planNames, type NamePlan } from './cluster.js';
import { measureCrossProcessClock } from './clock-check.js';
import { refNow } from './clock.js';
import { readHistory, type HistoryEvent, type NemesisEvent } from './history.js';
import { Oracle } from './oracle.js';
import { scenarios, WORKER_DEFAULTS, type NemesisContext, type Scenario, type WorkerHandle } from './scenarios.js';
import { rng, type NamesConfig, type WorkerConfig, type WorkerMessage } from './protocol.js';

const PREFIX = 'safety:';
const WORKER_SOURCE = fileURLToPath(new URL('./worker.ts', import.meta.url));
let WORKER = WORKER_SOURCE;

/** Bundles the worker into one .mjs (dependencies left external) so that a worker starts in ~0.1 s, not ~1–3 s. */
async function bundleWorker(): Promise<string> {
  // Inside the project (results/tmp is git-ignored) so that its bare imports resolve to node_modules.
  const outfile = fileURLToPath(new URL('../../results/tmp/safety-worker.mjs', import.meta.url));
  await build({ entryPoints: [WORKER_SOURCE], bundle: true, platform: 'node', format: 'esm', target: 'node20', packages: 'external', outfile, logLevel: 'error' });
  return outfile;
}

interface Args {
  quick: boolean;
  seed: number;
  only: string[] | undefined;
  keep: boolean;
  out: string | undefined;
}

function parseArgs(argv: string[]): Args {
  const args: Args = { quick: false, seed: 1, only: undefined, keep: false, out: undefined };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    if (a === '--quick') args.quick = true;
    else if (a === '--keep') args.keep = true;
    else if (a === '--seed') args.seed = Number(argv[++i]);
    else if (a === '--only') args.only = (argv[++i] ?? '').split(',');
    else if (a === '--out') args.out = argv[++i];
    else throw new Error(`unknown argument ${a}; see test/safety/run.ts`);
  }
  if (!Number.isInteger(args.seed)) throw new Error('--seed takes an integer');
  return args;
}

export interface ScenarioResult {
  scenario: Scenario;
  seed: number;
  durationMs: number;
  history: HistoryReport;
  resource: ResourceReport;
  verdict: 'pass' | 'FAIL';
  why: string[];
  /** Figures a scenario adds to its line in the results (a Cluster run's migrations, counters, failures by code). */
  notes: string[];
  dir: string;
}

async function runScenario(s: Scenario, seed: number, durationMs: number, workerCount: number, uncertaintyMs: number, dir: string): Promise<ScenarioResult & { setupMs: number }> {
  const random = rng(seed);
  const oracleServer = await RedisServer.start();
  const cluster = s.cluster ? await RedisCluster.start(s.cluster.masters, 0) : undefined;
  const servers = cluster ? [] : await Promise.all(Array.from({ length: s.servers ?? 1 }, () => RedisServer.start({ args: s.serverArgs ?? [] })));
  const oracleRedis = new Redis(oracleServer.url);
  oracleRedis.on('error', () => {});
  const proxies: FaultProxy[] = [];
  const workers: WorkerHandle[] = [];
  const nemesisEvents: NemesisEvent[] = [];
  const nemesisFailures = new Set<string>();
  const lock = `safety-${s.name}`;
  let holder: WorkerHandle | undefined;
  let count = 0;
  let finished = false;

  let plan: NamePlan | undefined;
  let names: NamesConfig | undefined;

  const spawn = async (): Promise<WorkerHandle> => {
    const n = ++count;
    const id = `w${n}`;
    // (a Cluster client must reach the nodes at the addresses they announce: no proxy)
    const own = cluster ? [] : await Promise.all(servers.map((srv) => FaultProxy.start(srv.port, { random })));
    proxies.push(...own);
    const config: WorkerConfig = {
      ...WORKER_DEFAULTS,
      ...s.worker,
      id,
      backend: s.backend,
      permits: s.permits ?? 1,
      adapter: n % 2 === 1 ? 'ioredis' : 'node-redis',
      urls: cluster ? cluster.nodes.map((node) => `redis://${node.host}:${node.port}`) : own.map((p) => p.url),
      ...(names && s.cluster ? { names, loops: s.cluster.loops } : {}),
      oracleUrl: oracleServer.url,
      lock,
      prefix: PREFIX,
      historyPath: join(dir, `${id}.jsonl`),
      seed: seed * 1000 + n,
    };
    const process = WorkerProcess.spawn<WorkerMessage>(id, WORKER, [JSON.stringify(config)]);
    const handle: WorkerHandle = { id, process, proxies: own };
    process.onMessage((m) => {
      if (m.t === 'held') holder = handle;
      else if (m.t === 'free' && holder === handle) holder = undefined;
    });
    void process.exited.then(() => {
      if (holder === handle) holder = undefined;
    });
    await process.waitFor((m) => m.t === 'ready', 90_000);
    workers.push(handle);
    return handle;
  };

  const started = refNow();
  try {
    // A Cluster scenario: the names (written for the workers), and filler keys in the slots to migrate.
    if (s.cluster && cluster) {
      const { masters: _m, loops: _l, names: spec, fillers, ...window } = s.cluster;
      plan = planNames(seed, PREFIX, spec);
      names = { path: join(dir, 'names.json'), ...window };
      writeFileSync(names.path, JSON.stringify(plan.names));
      await addFillers(cluster, PREFIX, plan.names, plan.migrating, fillers);
    }
    await Promise.all(Array.from({ length: workerCount }, () => spawn()));
    const setupMs = Math.round(refNow() - started);
    const end = refNow() + durationMs;
    const timers = new Set<() => void>();
    const ctx: NemesisContext = {
      random,
      servers,
      ...(cluster && plan ? { cluster: { cluster, slots: plan.migrating } } : {}),
      workers: () => workers.filter((w) => w.process.alive),
      done: () => finished || refNow() >= end,
      sleep: (ms) =>
        new Promise<void>((resolve) => {
          const left = Math.max(0, Math.min(ms, end - refNow()));
          const wake = () => {
            clearTimeout(t);
            timers.delete(wake);
            resolve();
          };
          const t = setTimeout(wake, left);
          timers.add(wake);
        }),
      holder: async (timeoutMs) => {
        const until = refNow() + timeoutMs;
        while (!holder || !holder.process.alive) {
          if (refNow() >= until || refNow() >= end) return undefined;
          await new Promise((r) => setTimeout(r, 5));
        }
        return holder;
      },
      now: refNow,
      record: (e) => nemesisEvents.push({ type: 'nemesis', ...e }),
      spawn,
      fail: (reason) => nemesisFailures.add(reason),
    };
    const nemesis = s.nemesis ? s.nemesis(ctx) : Promise.resolve();
    await new Promise((r) => setTimeout(r, durationMs));
    finished = true;
    for (const wake of [...timers]) wake();
    await nemesis;
    for (const srv of servers) if (srv.paused) srv.resume();
    for (const p of proxies) p.heal();
    await Promise.all(workers.map((w) => w.process.stop('stop', 8000)));
    const endRef = refNow();

    const events: HistoryEvent[] = [...nemesisEvents];
    for (const w of workers) events.push(...readHistory(join(dir, `${w.id}.jsonl`)));
    writeFileSync(join(dir, 'nemesis.jsonl'), nemesisEvents.map((e) => JSON.stringify(e)).join('\n') + '\n');
    const history = checkHistory(events, {
      uncertaintyMs,
      useBudgetMs: s.worker.useBudgetMs ?? WORKER_DEFAULTS.useBudgetMs,
      livenessBoundMs: s.livenessBoundMs,
      recoveryBoundMs: s.recoveryBoundMs ?? s.livenessBoundMs,
      tokenScope: s.tokenScope ?? 'single',
      permits: s.permits ?? 1,
      endRef,
      ...(cluster ? { tokenGroups: clusterTokenGroups() } : {}),
    });
    // The fenced resource of every lock the workers used (one for most scenarios).
    const locks = new Set([lock, ...events.flatMap((e) => (e.type === 'acq.inv' ? [e.lock] : []))]);
    const oracle = new Oracle(oracleRedis);
    const resource = sumResources(await Promise.all([...locks].map(async (l) => checkResource(await oracle.state(l)))));
    const why: string[] = [];
    const notes: string[] = [];
    if (cluster && plan) {
      const c = await checkCluster(cluster, PREFIX, events, plan.migrating);
      notes.push(...c.notes);
      why.push(...c.why);
    }
    if (history.counts.bug > 0) why.push(`${history.counts.bug} bug(s)`);
    if (resource.staleAccepted > 0) why.push(`${resource.staleAccepted} stale write(s) accepted`);
    if (resource.lostFenced !== 0) why.push(`${resource.lostFenced} fenced update(s) lost`);
    if (!history.liveness.held) why.push('liveness bound broken');
    if (history.grants === 0) why.push('no acquisition at all');
    why.push(...nemesisFailures);
    const expectedOverlaps = history.overlaps.filter((o) => o.verdict === 'expected').length;
    if (resource.lostUnfenced > 0 && expectedOverlaps === 0) why.push(`${resource.lostUnfenced} lost update(s) with no overlap to explain them`);
    if (s.expectViolation && expectedOverlaps === 0) why.push('self-test saw no double grant: the checker may be blind');
    return { setupMs, scenario: s, seed, durationMs: Math.round((refNow() - started) / 100) * 100, history, resource, verdict: why.length ? 'FAIL' : 'pass', why, notes, dir };
  } finally {
    finished = true;
    await Promise.all(workers.map((w) => w.process.kill()));
    await Promise.all(proxies.map((p) => p.close()));
    oracleRedis.disconnect();
    await Promise.all([oracleServer, ...servers].map((srv) => srv.stop()));
    await cluster?.stop();
  }
}

/** On a Cluster, a lock `<kind>:<name>` mints from the counter of its name's slot: every kind of a name, every name of a slot. */
function clusterTokenGroups(): (lock: string) => string[] {
  const keys = new Keys(PREFIX);
  const cache = new Map<string, string[]>();
  return (lock) => {
    let groups = cache.get(lock);
    if (!groups) {
      const name = lock.slice(lock.indexOf(':') + 1);
      cache.set(lock, (groups = [`name ${name}`, `slot ${slotOf(keys.lock(name))}`]));
    }
    return groups;
  };
}

function sumResources(reports: ResourceReport[]): ResourceReport {
  const sum: ResourceReport = { fencedWrites: 0, rejected: 0, staleAccepted: 0, shadowStale: 0, lostFenced: 0, lostUnfenced: 0 };
  for (const r of reports) for (const k of Object.keys(sum) as (keyof ResourceReport)[]) sum[k] += r[k];
  return sum;
}

function row(r: ScenarioResult): string {
  const h = r.history;
  const o = (v: 'expected' | 'bug' | 'ambiguous') => h.overlaps.filter((x) => x.verdict === v).length;
  const otherBugs = h.findings.filter((f) => f.verdict === 'bug').length;
  const l = h.liveness;
  const worst = [l.maxLatencyMs === null ? '' : `after kill ${l.maxLatencyMs} ms`, l.maxHandoffMs === null ? '' : `hand-off ${l.maxHandoffMs} ms`].filter(Boolean).join(', ');
  const live = l.checks === 0 ? 'n/a' : `${l.held ? 'yes' : '**NO**'} (${l.checks} checks${worst ? `; max ${worst}` : ''})`;
  return `| ${r.scenario.name} | ${h.grants} | ${h.uses} | ${h.faults} | ${o('expected')} / ${o('ambiguous')} / ${o('bug')} | ${otherBugs} | ${r.resource.staleAccepted} | ${r.resource.rejected} | ${r.resource.shadowStale} | ${r.resource.lostFenced} / ${r.resource.lostUnfenced} | ${live} | ${r.verdict === 'pass' ? 'pass' : `**FAIL**: ${r.why.join('; ')}`} |`;
}

const HEADER = [
  '| scenario | acquisitions checked | uses | faults injected | overlaps expected / ambiguous / bug | other bugs | stale writes accepted (fenced) | stale ops rejected (fenced) | unfenced writes out of token order (shadow) | lost updates fenced / unfenced | liveness bound held | verdict |',
  '|---|---:|---:|---:|---|---:|---:|---:|---:|---|---|---|',
];

async function main(): Promise<void> {
  const args = parseArgs(process.argv.slice(2));
  const chosen = scenarios.filter((s) => (args.only ? args.only.includes(s.name) : args.quick ? s.quickMs !== undefined : true));
  if (chosen.length === 0) throw new Error(`no scenario matches ${args.only?.join(',')}`);
  const clock = await measureCrossProcessClock(200);
  // Timestamp uncertainty: the measured cross-process ordering precision, plus conversion slack.
  const uncertaintyMs = Math.round((clock.uncertaintyMs + 0.5) * 1000) / 1000;
  console.log(
    `clock self-test: ${clock.samples} cross-process round trips, ${clock.outOfOrder} out of order, ordering precision ±${clock.uncertaintyMs.toFixed(3)} ms (median round trip ${clock.medianRoundTripMs.toFixed(3)} ms); checker uncertainty ${uncertaintyMs} ms`,
  );
  if (clock.outOfOrder > 0) {
    console.error('the reference clock is not shared across processes: the interval checker cannot run');
    process.exit(1);
  }
  const root = mkdtempSync(join(tmpdir(), 'holdfast-safety-'));
  WORKER = await bundleWorker();
  const results: ScenarioResult[] = [];
  const t0 = refNow();
  for (const s of chosen) {
    const seed = args.seed * 100 + scenarios.indexOf(s);
    const dir = join(root, s.name);
    mkdirSync(dir, { recursive: true });
    const duration = args.quick ? (s.quickMs ?? s.durationMs) : s.durationMs;
    process.stdout.write(`${s.name} (seed ${seed}, ${duration / 1000} s): ${s.title} … `);
    const r = await runScenario(s, seed, duration, args.quick ? Math.min(s.workers, 4) : s.workers, uncertaintyMs, dir);
    results.push(r);
    console.log(`${r.verdict}${r.why.length ? ` (${r.why.join('; ')})` : ''}: ${r.history.grants} acquisitions, ${r.history.faults} faults (${r.durationMs / 1000} s, start-up ${(r.setupMs / 1000).toFixed(1)} s)`);
    for (const note of r.notes) console.log(`  ${note}`);
    for (const o of r.history.overlaps.filter((x) => x.verdict === 'bug').slice(0, 5)) console.log(`  overlap ${o.first} / ${o.second}: ${o.overlapMs} ms (${o.reason})`);
    for (const f of r.history.findings.filter((x) => x.verdict === 'bug').slice(0, 5)) console.log(`  ${f.kind}: ${f.detail}`);
  }
  const total = Math.round((refNow() - t0) / 1000);
  const date = new Date().toISOString().slice(0, 10);
  const failed = results.filter((r) => r.verdict !== 'pass');
  const table = [...HEADER, ...results.map(row)].join('\n');
  const expectedReasons = results
    .map((r) => {
      const reasons = new Map<string, number>();
      for (const o of r.history.overlaps) if (o.verdict === 'expected') reasons.set(`overlap (${o.reason})`, (reasons.get(`overlap (${o.reason})`) ?? 0) + 1);
      for (const f of r.history.findings) if (f.verdict === 'expected') reasons.set(`${f.kind} (data-loss)`, (reasons.get(`${f.kind} (data-loss)`) ?? 0) + 1);
      return reasons.size ? `- ${r.scenario.name}: ${[...reasons].map(([k, v]) => `${v} × ${k}`).join(', ')}` : '';
    })
    .filter(Boolean);
  const report = [
    `# holdfast safety run, ${date}${args.quick ? ' (quick subset)' : ''}`,
    '',
    `Command: \`npm run safety --${args.quick ? ' --quick' : ''}${args.only ? ` --only ${args.only.join(',')}` : ''} --seed ${args.seed}\` · ${results.length} scenarios · ${total} s · redis-server, Node ${process.version}, ${process.platform}/${process.arch}.`,
    `Clock self-test: ${clock.samples} cross-process round trips, ${clock.outOfOrder} out of order, ordering precision ±${clock.uncertaintyMs.toFixed(3)} ms; checker timestamp uncertainty ${uncertaintyMs} ms.`,
    '',
    table,
    '',
    '## Scenarios',
    '',
    ...results.map(
      (r) =>
        `- **${r.scenario.name}** (seed ${r.seed}, ${r.scenario.workers} workers${r.scenario.cluster ? ` × ${r.scenario.cluster.loops} loops` : ''}, ${r.durationMs / 1000} s): ${r.scenario.title}. ` +
        `Leases extended ${r.history.leases.extended}, extensions refused ${r.history.leases.refused}, losses signalled ${r.history.leases.lost}.` +
        r.notes.map((n) => ` ${n}`).join(''),
    ),
    '',
    '## Why the expected findings were expected',
    '',
    ...(expectedReasons.length ? expectedReasons : ['- none']),
    '',
  ].join('\n');
  console.log('\n' + table + '\n');
  const outDir = args.out ?? 'results';
  mkdirSync(outDir, { recursive: true });
  const file = join(outDir, `safety-${date}${args.quick ? '-quick' : ''}.md`);
  writeFileSync(file, report);
  console.log(`wrote ${file} (${total} s)`);
  if (failed.length > 0 || args.keep) console.log(`histories kept in ${root}`);
  else rmSync(root, { recursive: true, force: true });
  if (failed.length > 0) {
    console.log(`FAILED: ${failed.map((r) => r.scenario.name).join(', ')}`);
    process.exit(1);
  }
  process.exit(0);
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});

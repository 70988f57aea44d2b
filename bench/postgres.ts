/**
 * `npm run bench:postgres` — locks on PostgreSQL, side by side, against a running server (127.0.0.1:5432, user
 * postgres, by default; `--url` for another). Not a test: a shared machine is noisy, so read the ratios of one run.
 *
 * 1. Independent names: acquire + release on a fresh name (`order:<n>`), 1, 64 and 256 in flight, each contender on
 *    its own `pg.Pool` of 10 connections and in its own schema. Rounds interleave the contenders (order rotated each
 *    round, reversed on odd ones: `roundOrder` of bench/independent-keys.ts) with a floor segment before the first and
 *    after each one; a contender's ratio to the floor is, per round, its cycles/s ÷ the mean of the floor segments just
 *    before and after it, median over rounds (as bench/independent-keys.ts does for Redis).
 * 2. Wake-up: a holder holds a name, a second client of the same contender waits for it with the library's own
 *    waiting at its defaults, the holder releases after a random 20–320 ms; the time from the release's return to the
 *    waiter's grant. Holder and waiter are separate clients (separate pools), as two services would be.
 *
 * Contenders: the floor (a bare table, `INSERT … ON CONFLICT DO NOTHING` / `DELETE … WHERE owner`), @verrou/core's
 * SQL store on Kysely, syncguard's PostgreSQL backend, holdfast's PostgreSQL store (lease 10 s, and watchdog). One
 * that cannot be loaded or set up is skipped with the reason printed. Every schema is made for the run
 * (`hf_bench_<run>_<contender>`) and dropped at the end; nothing else is dropped.
 *
 *   npm run bench:postgres -- [--rounds 5] [--seconds 2] [--depths 1,64,256] [--handoffs 30] [--write results/pg.md]
 */
import { randomUUID } from 'node:crypto';
import { mkdirSync, writeFileSync } from 'node:fs';
import { cpus, loadavg, totalmem } from 'node:os';
import { dirname } from 'node:path';
import { parseArgs } from 'node:util';
import pg from 'pg';
import { Holdfast } from './holdfast.js';
import { fmt, freshName, median, quantile, roundOrder, table } from './independent-keys.js';

const { values } = parseArgs({
  options: {
    rounds: { type: 'string', default: '5' },
    seconds: { type: 'string', default: '2' },
    depths: { type: 'string', default: '1,64,256' },
    handoffs: { type: 'string', default: '30' },
    url: { type: 'string', default: process.env.HOLDFAST_BENCH_PG_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres' },
    write: { type: 'string' },
  },
});
const ROUNDS = Number(values.rounds);
const SEGMENT_MS = Number(values.seconds) * 1000;
const DEPTHS = values.depths.split(',').map(Number);
const HANDOFFS = Number(values.handoffs);
const PG_URL = values.url;
const POOL_SIZE = 10;
/** The fixed lease of the lease rows (ms), and the TTL the peers and the floor are given. */
const LEASE = 10_000;
/** How long a waiter may wait in the wake-up measurement before it counts as an error (ms). */
const WAIT_LIMIT = 10_000;
const RUN = randomUUID().slice(0, 8);

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));
const progress = (line: string): void => void process.stderr.write(line + '\n');
const quote = (identifier: string): string => `"${identifier.replaceAll('"', '""')}"`;

// ---------------------------------------------------------------- contenders

type Release = () => Promise<unknown>;

/** One client of a contender: its own pool (or its library's) on the contender's schema. */
interface Instance {
  /** Acquire + release on `name`, which nobody else uses. */
  cycle(name: string): Promise<void>;
  /** Takes `name` (free) and returns its release. */
  hold(name: string): Promise<Release>;
  /** Waits for `name` (held by another client) with the library's own waiting at its defaults; returns its release. */
  wait(name: string): Promise<Release>;
  close(): Promise<void>;
}

interface Contender {
  id: string;
  /** What the table says about it. */
  note: string;
  /**
   * A client on `schema` (made for this run, empty); `poolSize` connections. Throws {@link Skip} when the contender
   * cannot run here.
   */
  open(schema: string, poolSize: number): Promise<Instance>;
}

/** A contender that cannot run: the reason is printed and the bench goes on. */
class Skip extends Error {}

const newPool = (poolSize: number, searchPath?: string): pg.Pool => {
  const config: pg.PoolConfig = { connectionString: PG_URL, max: poolSize };
  if (searchPath !== undefined) config.options = `-c search_path=${searchPath}`;
  const pool = new pg.Pool(config);
  pool.on('error', () => {}); // an idle connection's error (the server restarted) must not end the run
  return pool;
};

const floor: Contender = {
  id: 'floor',
  note: 'a bare table `(name text primary key, owner text, expires_at timestamptz)`: take = `INSERT … ON CONFLICT DO NOTHING` (again at once while it conflicts), give back = `DELETE … WHERE name = $1 AND owner = $2`; one statement each, no expiry handling, no fencing',
  async open(schema, poolSize) {
    const pool = newPool(poolSize);
    const t = `${quote(schema)}.locks`;
    await pool.query(`CREATE TABLE IF NOT EXISTS ${t} (name text PRIMARY KEY, owner text, expires_at timestamptz)`);
    const take = {
      name: `floor_take_${schema}`,
      text: `INSERT INTO ${t} (name, owner, expires_at) VALUES ($1, $2, now() + make_interval(secs => $3)) ON CONFLICT DO NOTHING`,
    };
    const give = { name: `floor_give_${schema}`, text: `DELETE FROM ${t} WHERE name = $1 AND owner = $2` };
    const owner = randomUUID();
    let seq = 0;
    const acquire = async (name: string): Promise<Release> => {
      const token = `${owner}:${++seq}`;
      while (((await pool.query({ ...take, values: [name, token, LEASE / 1000] })).rowCount ?? 0) === 0) {
        /* taken: try again at once */
      }
      return async () => {
        if (((await pool.query({ ...give, values: [name, token] })).rowCount ?? 0) !== 1) throw new Error(`floor: ${name} was not ours`);
      };
    };
    return {
      cycle: async (name) => void (await (await acquire(name))()),
      hold: acquire,
      wait: acquire,
      close: () => pool.end(),
    };
  },
};

/** The part of @verrou/core and Kysely the bench uses (loaded at run time: bench/node_modules may lack them). */
interface VerrouLock {
  acquire(): Promise<boolean>;
  release(): Promise<void>;
}
interface VerrouModules {
  Verrou: new (config: { default: string; stores: Record<string, { driver: unknown }> }) => { createLock(name: string, ttl?: number): VerrouLock };
  kyselyStore: (config: { connection: unknown; tableName?: string }) => unknown;
  Kysely: new (config: { dialect: unknown }) => { destroy(): Promise<void> };
  PostgresDialect: new (config: { pool: pg.Pool }) => unknown;
}

async function load(specifier: string, why: string): Promise<Record<string, unknown>> {
  try {
    return (await import(specifier)) as Record<string, unknown>;
  } catch (error) {
    throw new Skip(`${specifier} cannot be loaded (${why}): ${String(error).split('\n')[0] ?? ''}`);
  }
}

const verrou: Contender = {
  id: '@verrou/core (Kysely)',
  note: "@verrou/core's database store through Kysely's PostgresDialect on the pg.Pool (`kyselyStore`, its own table made by the store: `key varchar(255) primary key, owner, expiration bigint`); lock TTL 10 s; acquire = INSERT (on a duplicate key, an UPDATE of an expired row), release = SELECT owner then DELETE; waiting: its default retry, every 250 ms, no limit",
  async open(schema, poolSize) {
    const hint = 'run `npm ci --prefix bench`';
    const core = await load('@verrou/core', hint);
    const kyselyDriver = await load('@verrou/core/drivers/kysely', hint);
    const kysely = await load('kysely', hint);
    const m = { Verrou: core.Verrou, kyselyStore: kyselyDriver.kyselyStore, Kysely: kysely.Kysely, PostgresDialect: kysely.PostgresDialect } as VerrouModules;
    // its table is named without a schema: the pool's search_path puts it in this contender's
    const db = new m.Kysely({ dialect: new m.PostgresDialect({ pool: newPool(poolSize, quote(schema)) }) });
    const locks = new m.Verrou({ default: 'pg', stores: { pg: { driver: m.kyselyStore({ connection: db, tableName: 'verrou' }) } } });
    const acquire = async (name: string): Promise<Release> => {
      const lock = locks.createLock(name, LEASE);
      if (!(await lock.acquire())) throw new Error(`verrou: ${name} not acquired`);
      return () => lock.release();
    };
    // the store makes its table on first use: before any measurement
    await (await acquire(`warm:${randomUUID()}`))();
    return {
      cycle: async (name) => void (await (await acquire(name))()),
      hold: acquire,
      wait: acquire,
      close: () => db.destroy(),
    };
  },
};

const syncguard: Contender = {
  id: 'syncguard (postgres)',
  note: "syncguard's PostgreSQL backend (`syncguard/postgres`, on postgres.js rather than pg)",
  async open() {
    await load('syncguard/postgres', '`npm view syncguard` answered 404 Not Found from the npm registry reachable when this bench was written, so it is not in bench/package.json');
    // present after all (installed by hand): its contender was never written, as it could not be tried
    throw new Skip('syncguard is installed, but this bench has no contender for it yet: it could not be installed when the bench was written, so none was tried');
  },
};

/** The PostgreSQL store's API as announced: `new Holdfast({ postgres: pg.Pool, schema })`. */
interface HoldfastPostgres {
  lock(name: string): { acquire(options?: { lease?: number; timeout?: number }): Promise<{ release(): Promise<unknown> }> };
  close(): Promise<void>;
}
const PostgresHoldfast = Holdfast as unknown as new (options: { postgres: pg.Pool; schema: string }) => HoldfastPostgres;

function holdfastContender(lease: number | undefined): Contender {
  return {
    id: lease === undefined ? 'holdfast Lock, watchdog' : `holdfast Lock, lease ${fmt(lease / 1000)} s`,
    note:
      lease === undefined
        ? "holdfast's PostgreSQL store (`new Holdfast({ postgres, schema })`), `lock(name).acquire()`: no lease given, the watchdog keeps it; waiting: `acquire({ timeout: 10000 })`"
        : `holdfast's PostgreSQL store, \`lock(name).acquire({ lease: ${lease} })\`; waiting: \`acquire({ timeout: 10000 })\``,
    async open(schema, poolSize) {
      const pool = newPool(poolSize);
      let holdfast: HoldfastPostgres;
      try {
        holdfast = new PostgresHoldfast({ postgres: pool, schema });
      } catch (error) {
        await pool.end();
        if (error instanceof TypeError && /not a known option|unknown option/i.test(error.message)) {
          throw new Skip(`this build of holdfast has no PostgreSQL store yet (new Holdfast({ postgres }) throws: ${error.message.replace(/ \(known:.*\)$/, '')})`);
        }
        throw new Skip(`new Holdfast({ postgres, schema }) threw: ${String(error)}`);
      }
      const options = lease === undefined ? {} : { lease };
      const acquire = async (name: string): Promise<Release> => {
        const held = await holdfast.lock(name).acquire(options);
        return () => held.release();
      };
      return {
        cycle: async (name) => void (await (await acquire(name))()),
        hold: acquire,
        wait: async (name) => {
          const held = await holdfast.lock(name).acquire({ ...options, timeout: WAIT_LIMIT });
          return () => held.release();
        },
        close: async () => {
          await holdfast.close();
          await pool.end();
        },
      };
    },
  };
}

const contenders: Contender[] = [floor, verrou, syncguard, holdfastContender(LEASE), holdfastContender(undefined)];

// ---------------------------------------------------------------- schemas

/** The schemas this run made: the only ones it drops. */
const made = new Set<string>();

async function makeSchema(admin: pg.Pool, id: string): Promise<string> {
  const schema = `hf_bench_${RUN}_${id.toLowerCase().replace(/[^a-z0-9]+/g, '_').replace(/^_|_$/g, '')}`;
  await admin.query(`CREATE SCHEMA ${quote(schema)}`);
  made.add(schema);
  return schema;
}

async function dropSchemas(admin: pg.Pool): Promise<void> {
  for (const schema of made) {
    try {
      await admin.query(`DROP SCHEMA IF EXISTS ${quote(schema)} CASCADE`);
      made.delete(schema);
    } catch (error) {
      console.error(`could not drop schema ${schema}: ${String(error)}`);
    }
  }
}

// ---------------------------------------------------------------- independent names

interface Segment {
  cyclesPerSec: number;
  errors: number;
  firstError?: string;
}

const DRAIN_LIMIT_MS = 10_000;

/** `inFlight` loops run `cycle` on fresh names for `ms` (bench/independent-keys.ts' segment, without its Redis probe). */
async function segment(cycle: (name: string) => Promise<void>, inFlight: number, ms: number): Promise<Segment> {
  const end = performance.now() + ms;
  let inWindow = 0;
  let errors = 0;
  let firstError: string | undefined;
  let stuck = inFlight;
  const loops = Promise.all(
    Array.from({ length: inFlight }, async () => {
      while (performance.now() < end) {
        try {
          await cycle(freshName());
          if (performance.now() <= end) inWindow++;
        } catch (error) {
          errors++;
          firstError ??= String(error);
        }
      }
      stuck--;
    }),
  );
  // a cycle that never settles must not hang the benchmark: count its loop as an error
  let timer: NodeJS.Timeout | undefined;
  await Promise.race([loops, new Promise((resolve) => (timer = setTimeout(resolve, ms + DRAIN_LIMIT_MS)))]);
  clearTimeout(timer);
  if (stuck > 0) {
    errors += stuck;
    firstError ??= `${stuck} loops still in a cycle ${DRAIN_LIMIT_MS} ms after the window`;
  }
  const result: Segment = { cyclesPerSec: (inWindow / ms) * 1000, errors };
  if (firstError !== undefined) result.firstError = firstError;
  return result;
}

interface Running {
  contender: Contender;
  instance: Instance;
  /** Per depth, per round. */
  segments: Map<number, Segment[]>;
  ratios: Map<number, number[]>;
}

async function independentNames(running: Running[]): Promise<void> {
  // warm-up: every connection of each pool opened, statements prepared, JIT warm
  for (const r of running) await segment((name) => r.instance.cycle(name), POOL_SIZE * 4, Math.min(500, SEGMENT_MS));
  const floorRun = running.find((r) => r.contender === floor);
  if (!floorRun) throw new Error('the floor did not set up: no ratios without it');
  const run = async (r: Running, depth: number): Promise<Segment> => {
    const s = await segment((name) => r.instance.cycle(name), depth, SEGMENT_MS);
    r.segments.get(depth)?.push(s);
    return s;
  };
  for (let round = 0; round < ROUNDS; round++) {
    for (const depth of DEPTHS) {
      // as in bench/independent-keys.ts: the floor between every two contenders, each one's ratio to the mean of the
      // floor just before and just after it, so a burst of load from elsewhere moves both sides of a ratio alike
      let before = await run(floorRun, depth);
      for (const r of roundOrder(running.filter((x) => x !== floorRun), round)) {
        const own = await run(r, depth);
        const after = await run(floorRun, depth);
        r.ratios.get(depth)?.push(own.cyclesPerSec / ((before.cyclesPerSec + after.cyclesPerSec) / 2));
        before = after;
      }
    }
    progress(`independent names: round ${round + 1}/${ROUNDS} done`);
  }
}

// ---------------------------------------------------------------- wake-up

interface WakeUp {
  contender: Contender;
  holder: Instance;
  waiter: Instance;
  latencies: number[];
  errors: number;
  firstError?: string;
}

async function handoff(w: WakeUp): Promise<void> {
  const name = freshName();
  const release = await w.holder.hold(name);
  let grantedAt = NaN;
  const waiting = w.waiter.wait(name).then((r) => {
    grantedAt = performance.now();
    return r;
  });
  waiting.catch(() => {}); // handled below, after the release
  // a random hold, so that a waiter that polls is caught at any point of its period
  await sleep(20 + Math.random() * 300);
  await release();
  const releasedAt = performance.now();
  let timer: NodeJS.Timeout | undefined;
  const limit = new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Error(`no grant ${WAIT_LIMIT} ms after the release`)), WAIT_LIMIT)));
  try {
    const released = await Promise.race([waiting, limit]);
    w.latencies.push(grantedAt - releasedAt);
    await released();
  } finally {
    clearTimeout(timer);
  }
}

async function wakeUps(all: WakeUp[]): Promise<void> {
  for (let i = 0; i < HANDOFFS; i++) {
    for (const w of roundOrder(all, i)) {
      try {
        await handoff(w);
      } catch (error) {
        w.errors++;
        w.firstError ??= String(error);
      }
    }
    if ((i + 1) % 10 === 0 || i + 1 === HANDOFFS) progress(`wake-up: ${i + 1}/${HANDOFFS} hand-offs each`);
  }
}

// ---------------------------------------------------------------- main

function loadLine(): string[] {
  const [one, five, fifteen] = loadavg() as [number, number, number];
  const cores = cpus().length;
  const lines = [`Load average (1, 5, 15 min): ${one.toFixed(2)}, ${five.toFixed(2)}, ${fifteen.toFixed(2)} on ${cores} cores (${(one / cores).toFixed(2)} per core).\n`];
  if (one / cores > 0.5) {
    lines.push(`**Warning: the machine is busy (1-min load ${(one / cores).toFixed(2)} per core, above 0.5): the figures below are slowed and noisier than on an idle machine; the ratios within this run still compare like with like.**\n`);
  }
  return lines;
}

async function main(): Promise<void> {
  const began = Date.now();
  const out: string[] = [];
  const log = (text: string): void => {
    console.log(text);
    out.push(text);
  };
  const admin = newPool(2);
  let version: string;
  try {
    version = ((await admin.query<{ server_version: string }>('SHOW server_version')).rows[0]?.server_version ?? '?').split(' ')[0] ?? '?';
  } catch (error) {
    await admin.end();
    console.error(`bench:postgres: cannot reach PostgreSQL at ${PG_URL}: ${String(error)}`);
    console.error('Start it (e.g. `pg_ctlcluster --skip-systemctl-redirect 15 main start`) or give --url.');
    process.exitCode = 1;
    return;
  }
  const onSignal = (): void => {
    void dropSchemas(admin).finally(() => process.exit(130));
  };
  process.once('SIGINT', onSignal);
  process.once('SIGTERM', onSignal);

  const running: Running[] = [];
  const wakers: WakeUp[] = [];
  const skipped: { id: string; reason: string }[] = [];
  try {
    for (const line of loadLine()) log(line);
    const date = new Date().toISOString();
    const machine = `${cpus().length} × ${cpus()[0]?.model.trim() ?? '?'}, ${Math.round(totalmem() / 2 ** 30)} GiB, Node ${process.version}, PostgreSQL ${version} (${new URL(PG_URL).host})`;
    log(`# holdfast on PostgreSQL: side by side\n`);
    log(`${date} · ${machine} · run ${RUN}\n`);
    log('Ratios within this one run are what counts: the machine is shared and noisy.\n');

    for (const contender of contenders) {
      let schema: string | undefined;
      const opened: Instance[] = [];
      try {
        schema = await makeSchema(admin, contender.id);
        const instance = await contender.open(schema, POOL_SIZE);
        opened.push(instance);
        // the wake-up's two clients: separate pools on the same schema, as two services would be
        const holder = await contender.open(schema, 2);
        opened.push(holder);
        const waiter = await contender.open(schema, 2);
        opened.push(waiter);
        running.push({ contender, instance, segments: new Map(DEPTHS.map((d) => [d, []])), ratios: new Map(DEPTHS.map((d) => [d, []])) });
        wakers.push({ contender, holder, waiter, latencies: [], errors: 0 });
      } catch (error) {
        for (const i of opened) await i.close().catch(() => {});
        const reason = error instanceof Skip ? error.message : `setup failed: ${String(error)}`;
        skipped.push({ id: contender.id, reason });
        progress(`skipped ${contender.id}: ${reason}`);
        if (contender === floor) throw new Error(`the floor did not set up: no ratios without it (${reason})`, { cause: error });
      }
    }

    await independentNames(running);
    await wakeUps(wakers);

    log('## Independent names: acquire + release on a fresh name, N in flight\n');
    log(
      `Each contender: one pg.Pool of ${POOL_SIZE} connections and its own schema; each in-flight loop takes a fresh name (\`order:<n>\`) every cycle, so nothing is contended. ` +
        `${ROUNDS} interleaved rounds of ${fmt(SEGMENT_MS)} ms per contender and depth (order rotated each round, reversed on odd rounds), a floor segment before the first contender and after each one; cycles/s: median over segments. ` +
        '× floor: median over rounds of (cycles/s ÷ the mean cycles/s of the floor segments run just before and just after it), with its interquartile range.\n',
    );
    for (const depth of DEPTHS) {
      log(`### ${depth} in flight\n`);
      log(
        table(
          ['contender', 'cycles/s', '× floor', 'IQR', 'errors'],
          running.map((r) => {
            const segments = r.segments.get(depth) ?? [];
            const ratios = r.contender === floor ? [1] : (r.ratios.get(depth) ?? []);
            const errors = segments.reduce((a, s) => a + s.errors, 0);
            const firstError = segments.find((s) => s.firstError)?.firstError ?? '';
            return [
              r.contender.id,
              fmt(median(segments.map((s) => s.cyclesPerSec))),
              fmt(median(ratios), 2),
              `${fmt(quantile(ratios, 0.25), 2)}–${fmt(quantile(ratios, 0.75), 2)}`,
              errors ? `${fmt(errors)} (${firstError.slice(0, 80)})` : '0',
            ];
          }),
        ) + '\n',
      );
    }

    log('## Wake-up: release by the holder → grant to the waiter\n');
    log(
      `${HANDOFFS} hand-offs per contender, interleaved: a holder client takes a fresh name, a second client (its own pool) waits for it with the library's own waiting at its defaults, the holder releases after a random 20–320 ms; ` +
        'the time from the release\'s return to the waiter\'s grant (ms; negative when the grant arrived before the release call returned).\n',
    );
    log(
      table(
        ['contender', 'p50 (ms)', 'p95 (ms)', 'max (ms)', 'hand-offs', 'errors'],
        wakers.map((w) => [
          w.contender.id,
          fmt(quantile(w.latencies, 0.5), 1),
          fmt(quantile(w.latencies, 0.95), 1),
          fmt(Math.max(...w.latencies), 1),
          fmt(w.latencies.length),
          w.errors ? `${fmt(w.errors)} (${(w.firstError ?? '').slice(0, 80)})` : '0',
        ]),
      ) + '\n',
    );
    if (skipped.length) log('Skipped: ' + skipped.map((s) => `**${s.id}**: ${s.reason}`).join('; ') + '.\n');
    log('Contenders: ' + contenders.map((c) => `**${c.id}**: ${c.note}`).join('; ') + '.\n');
    log(`Run time ${fmt((Date.now() - began) / 1000)} s.`);

    if (values.write !== undefined) {
      mkdirSync(dirname(values.write), { recursive: true });
      writeFileSync(values.write, out.join('\n') + '\n');
      progress(`\nwrote ${values.write}`);
    }
  } finally {
    for (const r of running) await r.instance.close().catch(() => {});
    for (const w of wakers) {
      await w.holder.close().catch(() => {});
      await w.waiter.close().catch(() => {});
    }
    await dropSchemas(admin);
    process.off('SIGINT', onSignal);
    process.off('SIGTERM', onSignal);
    await admin.end();
  }
}

await main();

/**
 * `npm run bench:throughput` (per-entity locks at the floor's pace): against one redis-server this script
 * starts on a free port, so nothing else uses its CPU or keys.
 *
 * 1. Independent keys: 8, 64, 256 acquire+release cycles in flight on one connection, a fresh name each, for the
 *    floor, holdfast's primitives and the peers, on ioredis and node-redis (bench/independent-keys.ts).
 * 2. Contended: 8 and 4 contenders looping acquire → hold 1 ms → release on one name, each with its own client and
 *    connection, and (sub-row) all sharing one client; hand-offs/s against the ceiling 1/(hold + 2·RTT).
 * 3. Keys left: DBSIZE after K distinct names were acquired and released, and bytes per held lock (used_memory with
 *    10,000 held at once).
 *
 * Prints markdown and writes results/throughput-<date>.md and .json. A benchmark, never a test: the machine is shared
 * and noisy, so read the ratios of one run.
 *
 *   npm run bench:throughput                       quick: ~2 min
 *   npm run bench:throughput -- --full             longer rounds, 100,000 keys (or THROUGHPUT_FULL=1)
 *   npm run bench:throughput -- --sections=independent --only='Lock' --rounds=5 --segment-ms=1000 --keys=50000
 */
import { fork, type ChildProcess } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { cpus, totalmem } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { Redis } from 'ioredis';
import { Holdfast } from './holdfast.js';
import { RedisServer } from '../test/support/redis-server.js';
import {
  fmt,
  formatIndependentKeys,
  freshName,
  independentKeys,
  median,
  quantile,
  roundOrder,
  table,
  type IndependentKeysResult,
} from './independent-keys.js';
import type { Event, ResultMessage, SetupMessage } from './worker.js';

const { values } = parseArgs({
  options: {
    full: { type: 'boolean', default: process.env.THROUGHPUT_FULL === '1' },
    sections: { type: 'string', default: 'independent,contended,keys' },
    only: { type: 'string' },
    rounds: { type: 'string' },
    'segment-ms': { type: 'string' },
    keys: { type: 'string' },
  },
});
const FULL = values.full;
const SECTIONS = new Set(values.sections.split(','));
const ROUNDS = Number(values.rounds ?? (FULL ? 7 : 3));
const SEGMENT_MS = Number(values['segment-ms'] ?? (FULL ? 1000 : 200));
const CONTENDED_ROUNDS = FULL ? 5 : 2;
const CONTENDED_MS = FULL ? 4000 : 1000;
const CONTENDED_WARMUP_MS = 200;
const HOLD_MS = 1;
const KEYS = Number(values.keys ?? (FULL ? 100_000 : 20_000));
const HELD = 10_000;
/** Keys on the server before the third bytes-per-lock measurement: 20,000 + HELD stays below the next table size (32,768). */
const FILLED = 20_000;
const IN_FLIGHT = 64;

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));
const progress = (line: string): void => void process.stderr.write(line + '\n');

// ---------------------------------------------------------------- contended

/**
 * Where the contenders run: each with its own `Holdfast` and connection in this process, all sharing one client in
 * this process, or each in its own worker process (bench/worker.ts, one connection each) as separate services would.
 */
type Placement = 'own client' | 'shared client' | 'own process';

interface ContendedConfig {
  lock: 'Lock' | 'FairLock';
  contenders: number;
  placement: Placement;
}

/** A forked bench/worker.ts (the protocol of bench/run.ts). */
class Worker {
  readonly child: ChildProcess;
  #waiters: ((m: { type: string }) => void)[] = [];

  constructor() {
    this.child = fork(join(import.meta.dirname, 'worker.ts'), [], {
      execArgv: ['--import', 'tsx'],
      stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
      env: { ...process.env, HOLDFAST_BENCH_WORKER_BOOTED: '1' },
    });
    this.child.on('message', (m: { type: string; error?: string }) => {
      if (m.type === 'fatal') console.error(`worker error: ${m.error ?? ''}`);
      this.#waiters.shift()?.(m);
    });
  }
  next<T extends { type: string }>(): Promise<T> {
    return new Promise((resolve) => this.#waiters.push(resolve as (m: { type: string }) => void));
  }
  send(message: object): void {
    this.child.send(message);
  }
}

interface ContendedSample {
  acquisitionsPerSec: number;
  handoffsPerSec: number;
  jain: number;
  /** The longest wait for an acquisition in the window, or of a wait still going when the run stopped (ms). */
  longestWaitMs: number;
  /** The same, of the waits that began in the window: without the start-up (first connections and subscriptions). */
  longestWaitBegunMs: number;
  /** The 99th percentile of the waits of the acquisitions in the window (ms). */
  p99WaitMs: number;
  /**
   * The most acquisitions by others during one wait that began in the window: how far a waiter was passed over,
   * whatever the machine's stalls did to the time (a FIFO queue of n contenders gives at most n − 1).
   */
  mostPassedOver: number;
  meanHoldMs: number;
  /** hand-offs/s ÷ 1000/(mean hold + 2·RTT). */
  ceilingRatio: number;
  errors: number;
  firstError?: string;
}

function jain(counts: number[]): number {
  const sum = counts.reduce((a, b) => a + b, 0);
  const squares = counts.reduce((a, b) => a + b * b, 0);
  return squares === 0 ? 0 : (sum * sum) / (counts.length * squares);
}

interface Acquisition {
  id: number;
  at: number;
  wait: number;
}

interface Raw {
  events: Acquisition[];
  holds: { at: number; ms: number }[];
  /** Waits still going when the run stopped (ms). */
  pending: number[];
  windowStart: number;
  end: number;
  errors: number;
  firstError?: string;
}

/** Contenders in this process (own clients or one shared client); times from `performance.now()`. */
async function inProcess(url: string, cfg: ContendedConfig): Promise<Raw> {
  const name = `hot:${freshName()}`;
  const connections = Array.from({ length: cfg.placement === 'shared client' ? 1 : cfg.contenders }, () => new Redis(url));
  const clients = connections.map((redis) => new Holdfast({ redis, prefix: 'bench:' }));
  await Promise.all(connections.map((c) => c.ping()));
  const controller = new AbortController();
  const { signal } = controller;
  const raw: Raw = { events: [], holds: [], pending: [], windowStart: 0, end: 0, errors: 0 };
  const t0 = performance.now();
  raw.windowStart = t0 + CONTENDED_WARMUP_MS;
  raw.end = raw.windowStart + CONTENDED_MS;
  const loops = Array.from({ length: cfg.contenders }, async (_, id) => {
    const holdfast = clients[cfg.placement === 'shared client' ? 0 : id] as Holdfast;
    const lock = cfg.lock === 'Lock' ? holdfast.lock(name) : holdfast.fairLock(name);
    while (!signal.aborted) {
      const started = performance.now();
      let held;
      try {
        held = await lock.acquire({ signal });
      } catch (error) {
        if (signal.aborted) {
          raw.pending.push(performance.now() - started);
          break;
        }
        raw.errors++;
        raw.firstError ??= String(error);
        continue;
      }
      const at = performance.now();
      raw.events.push({ id, at, wait: at - started });
      await sleep(HOLD_MS);
      raw.holds.push({ at, ms: performance.now() - at });
      try {
        await held.release();
      } catch (error) {
        raw.errors++;
        raw.firstError ??= String(error);
      }
    }
  });
  await sleep(raw.end - performance.now());
  controller.abort();
  await Promise.allSettled(loops);
  for (const c of clients) await c.close();
  for (const c of connections) c.disconnect();
  return raw;
}

const wall = (): number => performance.timeOrigin + performance.now();

/** One contender per worker process; times are wall-clock ms. Waits still going at the end are not reported. */
async function inWorkers(workers: Worker[], url: string, cfg: ContendedConfig): Promise<Raw> {
  const key = `hot:${freshName()}`;
  const used = workers.slice(0, cfg.contenders);
  await Promise.all(
    used.map(async (w, id) => {
      const ready = w.next();
      const message: SetupMessage = { type: 'setup', subject: `holdfast ${cfg.lock}`, url, key, contenders: [id], holdMs: HOLD_MS };
      w.send(message);
      await ready;
    }),
  );
  const startAt = wall() + 100;
  const windowStart = startAt + CONTENDED_WARMUP_MS;
  const end = windowStart + CONTENDED_MS;
  const results = used.map((w) => w.next<ResultMessage>());
  for (const w of used) w.send({ type: 'go', startAt, endAt: end });
  const all = await Promise.all(results);
  const events = all.flatMap((r) => r.events);
  const raw: Raw = {
    events: events.map((e: Event) => ({ id: e[0], at: e[1], wait: e[2] })),
    // the worker reports hold durations without their start: take them all as in the window
    holds: all.flatMap((r) => r.holdMs).map((ms) => ({ at: windowStart, ms })),
    pending: [],
    windowStart,
    end,
    errors: all.reduce((a, r) => a + r.failures + (r.error ? 1 : 0), 0),
  };
  const error = all.find((r) => r.error)?.error;
  if (error !== undefined) raw.firstError = error;
  return raw;
}

async function contendedSegment(workers: Worker[], url: string, cfg: ContendedConfig, rttMs: number): Promise<ContendedSample> {
  const raw = cfg.placement === 'own process' ? await inWorkers(workers, url, cfg) : await inProcess(url, cfg);
  const { events, holds, pending, windowStart, end } = raw;
  events.sort((a, b) => a.at - b.at);
  let handoffs = 0;
  const perContender = new Array<number>(cfg.contenders).fill(0);
  let longestWait = 0;
  let longestBegun = 0;
  let acquisitions = 0;
  const waits: number[] = [];
  let mostPassedOver = 0;
  for (let i = 0; i < events.length; i++) {
    const e = events[i] as (typeof events)[number];
    if (e.at < windowStart || e.at >= end) continue;
    acquisitions++;
    waits.push(e.wait);
    perContender[e.id] = (perContender[e.id] ?? 0) + 1;
    longestWait = Math.max(longestWait, e.wait);
    const began = e.at - e.wait;
    if (began >= windowStart) {
      longestBegun = Math.max(longestBegun, e.wait);
      // the acquisitions (all by others) between this wait's start and its end: from the first one at or after the start
      let lo = 0;
      let hi = i;
      while (lo < hi) {
        const mid = (lo + hi) >> 1;
        if ((events[mid] as (typeof events)[number]).at < began) lo = mid + 1;
        else hi = mid;
      }
      mostPassedOver = Math.max(mostPassedOver, i - lo);
    }
    if (i > 0 && (events[i - 1] as (typeof events)[number]).id !== e.id) handoffs++;
  }
  for (const w of pending) {
    longestWait = Math.max(longestWait, w);
    if (end - w >= windowStart) longestBegun = Math.max(longestBegun, w);
  }
  const inWindowHolds = holds.filter((h) => h.at >= windowStart && h.at < end).map((h) => h.ms);
  const meanHold = inWindowHolds.length ? inWindowHolds.reduce((a, b) => a + b, 0) / inWindowHolds.length : NaN;
  const handoffsPerSec = (handoffs / CONTENDED_MS) * 1000;
  const sample: ContendedSample = {
    acquisitionsPerSec: (acquisitions / CONTENDED_MS) * 1000,
    handoffsPerSec,
    jain: jain(perContender),
    longestWaitMs: longestWait,
    longestWaitBegunMs: longestBegun,
    p99WaitMs: quantile(waits, 0.99),
    mostPassedOver,
    meanHoldMs: meanHold,
    ceilingRatio: handoffsPerSec / (1000 / (meanHold + 2 * rttMs)),
    errors: raw.errors,
  };
  if (raw.firstError !== undefined) sample.firstError = raw.firstError;
  return sample;
}

interface ContendedRow extends ContendedConfig {
  acquisitionsPerSec: number;
  handoffsPerSec: number;
  jain: number;
  longestWaitMs: number;
  longestWaitBegunMs: number;
  p99WaitMs: number;
  mostPassedOver: number;
  meanHoldMs: number;
  ceilingRatio: number;
  errors: number;
  firstError?: string;
  perRound: ContendedSample[];
}

async function contended(url: string, rttMs: number): Promise<ContendedRow[]> {
  const configs: ContendedConfig[] = [];
  for (const contenders of [8, 4]) {
    for (const lock of ['Lock', 'FairLock'] as const) {
      for (const placement of ['own client', 'own process', 'shared client'] as const) configs.push({ lock, contenders, placement });
    }
  }
  const samples = new Map<ContendedConfig, ContendedSample[]>(configs.map((c) => [c, []]));
  const workers = Array.from({ length: Math.max(...configs.map((c) => c.contenders)) }, () => new Worker());
  // the workers load first: their start-up (seconds of CPU under tsx) must not run during the first segments
  await Promise.all(workers.map((w) => w.next()));
  try {
    for (let round = 0; round < CONTENDED_ROUNDS; round++) {
      for (const cfg of roundOrder(configs, round)) samples.get(cfg)?.push(await contendedSegment(workers, url, cfg, rttMs));
      progress(`contended: round ${round + 1}/${CONTENDED_ROUNDS} done`);
    }
  } finally {
    for (const w of workers) w.send({ type: 'exit' });
  }
  return configs.map((cfg) => {
    const s = samples.get(cfg) ?? [];
    const row: ContendedRow = {
      ...cfg,
      acquisitionsPerSec: median(s.map((x) => x.acquisitionsPerSec)),
      handoffsPerSec: median(s.map((x) => x.handoffsPerSec)),
      jain: median(s.map((x) => x.jain)),
      longestWaitMs: Math.max(...s.map((x) => x.longestWaitMs)),
      longestWaitBegunMs: Math.max(...s.map((x) => x.longestWaitBegunMs)),
      p99WaitMs: median(s.map((x) => x.p99WaitMs)),
      mostPassedOver: Math.max(...s.map((x) => x.mostPassedOver)),
      meanHoldMs: median(s.map((x) => x.meanHoldMs)),
      ceilingRatio: median(s.map((x) => x.ceilingRatio)),
      errors: s.reduce((a, x) => a + x.errors, 0),
      perRound: s,
    };
    const firstError = s.find((x) => x.firstError)?.firstError;
    if (firstError !== undefined) row.firstError = firstError;
    return row;
  });
}

// ---------------------------------------------------------------- keys left

/** Takes `name` and returns its release. */
type Hold = (name: string) => Promise<() => Promise<unknown>>;

const CAD = "if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) else return 0 end";

function holders(redis: Redis, holdfast: Holdfast, floorSha: string): { id: string; hold: Hold }[] {
  return [
    {
      id: 'floor (reference)',
      hold: async (name) => {
        const token = `${Math.random()}`;
        await redis.set(name, token, 'PX', 30_000, 'NX');
        return () => redis.evalsha(floorSha, 1, name, token);
      },
    },
    {
      id: 'Lock, watchdog',
      hold: async (name) => {
        const held = await holdfast.lock(name).acquire();
        return () => held.release();
      },
    },
    {
      id: 'Lock, lease 30 s',
      hold: async (name) => {
        const held = await holdfast.lock(name).acquire({ lease: 30_000 });
        return () => held.release();
      },
    },
    {
      id: 'FairLock',
      hold: async (name) => {
        const held = await holdfast.fairLock(name).acquire();
        return () => held.release();
      },
    },
    {
      id: 'read lock',
      hold: async (name) => {
        const held = await holdfast.readWriteLock(name).readLock().acquire();
        return () => held.release();
      },
    },
    {
      id: 'write lock',
      hold: async (name) => {
        const held = await holdfast.readWriteLock(name).writeLock().acquire();
        return () => held.release();
      },
    },
    {
      id: 'withLock',
      hold: (name) =>
        new Promise((resolve, reject) => {
          let open!: () => void;
          const gate = new Promise<void>((r) => (open = r));
          const done = holdfast.withLock(name, () => {
            resolve(async () => {
              open();
              await done;
            });
            return gate;
          });
          done.catch(reject);
        }),
    },
  ];
}

/** Runs `task(i)` for i in 0 … n−1, `inFlight` at a time. */
async function pool(n: number, inFlight: number, task: (i: number) => Promise<void>): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(n, inFlight) }, async () => {
      while (next < n) await task(next++);
    }),
  );
}

const usedMemory = async (redis: Redis): Promise<number> => Number(/^used_memory:(\d+)/m.exec(await redis.info('memory'))?.[1] ?? NaN);

/** Key shapes (runs of 16+ word characters → <id>, digits → <n>) with their counts and how many have no TTL. */
async function keyShapes(redis: Redis): Promise<{ shape: string; keys: number; noTtl: number }[]> {
  const shapes = new Map<string, { keys: number; noTtl: number }>();
  let cursor = '0';
  do {
    const [next, keys] = await redis.scan(cursor, 'COUNT', 1000);
    cursor = next;
    if (keys.length === 0) continue;
    const pipeline = redis.pipeline();
    for (const k of keys) pipeline.pttl(k);
    const ttls = (await pipeline.exec()) ?? [];
    keys.forEach((k, i) => {
      const shape = k.replace(/[\w-]{16,}/g, '<id>').replace(/\d+/g, '<n>');
      const s = shapes.get(shape) ?? { keys: 0, noTtl: 0 };
      s.keys++;
      if (ttls[i]?.[1] === -1) s.noTtl++;
      shapes.set(shape, s);
    });
  } while (cursor !== '0');
  return [...shapes.entries()].map(([shape, s]) => ({ shape, ...s })).sort((a, b) => b.keys - a.keys);
}

interface KeysRow {
  implementation: string;
  cycles: number;
  keysLeft: number;
  keysLeftNoTtl: number;
  shapes: { shape: string; keys: number; noTtl: number }[];
  held: number;
  keysPerHeld: number;
  bytesPerHeld: number;
  /** The same, with the names' counters already made (they were acquired and released once before). */
  bytesPerHeldWarm: number;
  /** The same, on a server already holding {@link FILLED} keys: no hash table grows while they are taken. */
  bytesPerHeldFilled: number;
  keysLeftAfterHeld: number;
  errors: number;
}

async function keysLeft(url: string, probe: Redis): Promise<KeysRow[]> {
  const redis = new Redis(url);
  const holdfast = new Holdfast({ redis, prefix: 'bench:' });
  const floorSha = (await redis.script('LOAD', CAD)) as string;
  const rows: KeysRow[] = [];
  try {
    for (const { id, hold } of holders(redis, holdfast, floorSha)) {
      let errors = 0;
      /**
       * Holds every name of `names` at once: keys and used_memory per held lock, then releases them. `fillTo`: first
       * add plain filler keys until the server holds that many, so that its key tables neither grow nor rehash while
       * the locks are taken (a table that doubles during the measurement adds its whole new size to it).
       */
      const holdAll = async (names: string[], fillTo = 0) => {
        for (let n = await probe.dbsize(); n < fillTo; ) {
          const batch = probe.pipeline();
          for (const end = Math.min(fillTo, n + 1000); n < end; n++) batch.set(`filler:${n}`, 'x');
          await batch.exec();
        }
        await sleep(fillTo > 0 ? 500 : 50); // the server's active rehashing finishes a resize in the background
        const m0 = await usedMemory(probe);
        const k0 = await probe.dbsize();
        const releases: (() => Promise<unknown>)[] = [];
        await pool(names.length, IN_FLIGHT, async (i) => {
          try {
            releases.push(await hold(names[i] as string));
          } catch {
            errors++;
          }
        });
        const m1 = await usedMemory(probe);
        const k1 = await probe.dbsize();
        await pool(releases.length, IN_FLIGHT, async (i) => {
          try {
            await releases[i]?.();
          } catch {
            errors++;
          }
        });
        const k2 = await probe.dbsize();
        return { held: releases.length, keysPerHeld: (k1 - k0) / releases.length, bytesPerHeld: (m1 - m0) / releases.length, keysLeftAfterHeld: k2 - k0 };
      };
      // K acquire+release cycles on distinct names
      await probe.flushall('SYNC');
      const before = await probe.dbsize();
      await pool(KEYS, IN_FLIGHT, async () => {
        try {
          const release = await hold(freshName());
          await release();
        } catch {
          errors++;
        }
      });
      const left = (await probe.dbsize()) - before;
      const shapes = await keyShapes(probe);
      // HELD locks held at once, first on a flushed server: every name's slot counter (if any) is made then, as it
      // is on a fresh deployment
      await probe.flushall('SYNC');
      const names = Array.from({ length: HELD }, () => freshName());
      const cold = await holdAll(names);
      // then the same names again, their counters now in place: the steady state of a deployment whose counters
      // (at most one per slot) have all been made
      const warm = await holdAll(names);
      // and once more with the server already holding FILLED keys (counters included): the same hash tables before and
      // after, so the figure is what each held lock itself takes
      const filled = await holdAll(names, FILLED);
      rows.push({
        implementation: id,
        cycles: KEYS,
        keysLeft: left,
        keysLeftNoTtl: shapes.reduce((a, s) => a + s.noTtl, 0),
        shapes: shapes.slice(0, 4),
        held: cold.held,
        keysPerHeld: cold.keysPerHeld,
        bytesPerHeld: cold.bytesPerHeld,
        bytesPerHeldWarm: warm.bytesPerHeld,
        bytesPerHeldFilled: filled.bytesPerHeld,
        keysLeftAfterHeld: cold.keysLeftAfterHeld,
        errors,
      });
      progress(`keys left: ${id}: ${left} keys after ${KEYS} cycles`);
    }
  } finally {
    await holdfast.close();
    redis.disconnect();
  }
  return rows;
}

// ---------------------------------------------------------------- main

async function main(): Promise<void> {
  const began = Date.now();
  const server = await RedisServer.start();
  const probe = new Redis(server.url);
  const out: string[] = [];
  const log = (text: string): void => {
    console.log(text);
    out.push(text);
  };
  try {
    const version = /redis_version:(\S+)/.exec(await probe.info('server'))?.[1] ?? '?';
    const rtts: number[] = [];
    for (let i = 0; i < 500; i++) {
      const t = performance.now();
      await probe.ping();
      rtts.push(performance.now() - t);
    }
    const rtt = quantile(rtts, 0.5);
    const date = new Date().toISOString();
    const machine = `${cpus().length} × ${cpus()[0]?.model.trim() ?? '?'}, ${Math.round(totalmem() / 2 ** 30)} GiB, Node ${process.version}, redis-server ${version} (loopback)`;
    log(`# holdfast throughput: per-entity locks${FULL ? ' (--full)' : ''}\n`);
    log(`${date} · ${machine} · round trip (PING p50, idle) ${fmt(rtt * 1000)} µs\n`);
    log('Ratios within this one run are what counts: the machine is shared and noisy.\n');

    let independent: IndependentKeysResult | undefined;
    if (SECTIONS.has('independent')) {
      const options: Parameters<typeof independentKeys>[0] = { url: server.url, probe, rounds: ROUNDS, segmentMs: SEGMENT_MS, progress };
      if (values.only !== undefined) options.only = new RegExp(values.only, 'i');
      independent = await independentKeys(options);
      log('## Independent keys: acquire + release on a fresh name, many in flight on one connection\n');
      log(formatIndependentKeys(independent));
    }

    let contendedRows: ContendedRow[] | undefined;
    if (SECTIONS.has('contended')) {
      contendedRows = await contended(server.url, rtt);
      log(`## Contended: one name, acquire → hold ${HOLD_MS} ms (setTimeout) → release in a loop\n`);
      log(
        `${CONTENDED_ROUNDS} interleaved rounds of ${fmt(CONTENDED_MS)} ms (after ${CONTENDED_WARMUP_MS} ms warm-up), ioredis, all contenders in this process; medians over rounds, longest wait over all rounds. ` +
          '"own client": each contender has its own `Holdfast` and connection, all in this process; "own process": each in its own worker process (bench/worker.ts, one connection each; waits still going at the end are not seen there); "shared client": all share one `Holdfast` and connection in this process. ' +
          `Hand-offs count holder changes. Ceiling = 1/(measured mean hold + 2·RTT), RTT = idle PING p50 (${fmt(rtt * 1000)} µs). ` +
          'Jain: fairness over per-contender acquisitions (1 = equal). Longest wait: of the acquisitions in the window, whenever their wait began, and of a wait still going at the end; "begun in window": of the waits that began in the window only (a wait begun in the warm-up includes the contenders\' first connections and subscriptions). ' +
          '20 × cycle: 20 × (hold + hand-off), one cycle being 1/acquisitions per second. p99 wait: median over rounds. ' +
          'Most passed over: the most acquisitions by others during one wait begun in the window, over all rounds — how far a waiter fell behind in turns, which a stall of the machine does not inflate the way it inflates a wait in ms (a FIFO queue of n contenders gives n − 1).\n',
      );
      log(
        table(
          ['lock', 'contenders', 'placement', 'hand-offs/s', '÷ ceiling', 'acquisitions/s', 'mean hold (ms)', 'Jain', 'longest wait (ms)', 'begun in window (ms)', '20 × cycle (ms)', 'p99 wait (ms)', 'most passed over', 'errors'],
          contendedRows.map((r) => [
            r.lock,
            String(r.contenders),
            r.placement,
            fmt(r.handoffsPerSec),
            fmt(r.ceilingRatio, 2),
            fmt(r.acquisitionsPerSec),
            fmt(r.meanHoldMs, 2),
            fmt(r.jain, 3),
            fmt(r.longestWaitMs, 1),
            fmt(r.longestWaitBegunMs, 1),
            fmt(20 * (1000 / r.acquisitionsPerSec), 1),
            fmt(r.p99WaitMs, 1),
            fmt(r.mostPassedOver),
            r.errors ? `${fmt(r.errors)} (${(r.firstError ?? '').slice(0, 80)})` : '0',
          ]),
        ) + '\n',
      );
    }

    let keysRows: KeysRow[] | undefined;
    if (SECTIONS.has('keys')) {
      keysRows = await keysLeft(server.url, probe);
      log(`## Keys left and memory per held lock\n`);
      log(
        `Keys left: DBSIZE right after ${fmt(KEYS)} acquire+release cycles on distinct names (${IN_FLIGHT} in flight, ioredis), of which without a TTL, and the commonest key shapes. ` +
          `Held: ${fmt(HELD)} distinct names held at once on a flushed server — keys per held lock, bytes per held lock (INFO memory used_memory delta; this includes the fencing counters made on first use of their slot), and keys left once they were all released; then the same names held again, their counters in place (bytes per held lock, counters made: the steady state once a deployment has made its counters, at most one per slot); then once more on a server already holding ${fmt(FILLED)} keys (counters and plain filler keys), so that no key table of the server grows or rehashes while they are taken (bytes per held lock, ${fmt(FILLED)} keys in place: what each held lock itself takes; a table that doubles during a measurement adds its whole new size to that measurement).\n`,
      );
      log(
        table(
          ['implementation', 'keys left', 'of which no TTL', 'key shapes left (count)', 'keys/held lock', 'bytes/held lock', 'bytes/held lock, counters made', `bytes/held lock, ${fmt(FILLED)} keys in place`, 'keys left after releasing the held', 'errors'],
          keysRows.map((r) => [
            r.implementation,
            fmt(r.keysLeft),
            fmt(r.keysLeftNoTtl),
            r.shapes.length ? r.shapes.map((s) => `\`${s.shape}\` ${fmt(s.keys)}${s.noTtl ? ` (${fmt(s.noTtl)} no TTL)` : ''}`).join(', ') : '—',
            fmt(r.keysPerHeld, 2),
            fmt(r.bytesPerHeld),
            fmt(r.bytesPerHeldWarm),
            fmt(r.bytesPerHeldFilled),
            fmt(r.keysLeftAfterHeld),
            fmt(r.errors),
          ]),
        ) + '\n',
      );
    }
    log(`Run time ${fmt((Date.now() - began) / 1000)} s.`);

    const stamp = date.replace(/[:]/g, '-').replace(/\..*/, '');
    const dir = join(import.meta.dirname, '..', 'results');
    mkdirSync(dir, { recursive: true });
    writeFileSync(join(dir, `throughput-${stamp}.md`), out.join('\n') + '\n');
    const settings = { full: FULL, rounds: ROUNDS, segmentMs: SEGMENT_MS, contendedRounds: CONTENDED_ROUNDS, contendedMs: CONTENDED_MS, holdMs: HOLD_MS, keys: KEYS, held: HELD, filled: FILLED };
    writeFileSync(
      join(dir, `throughput-${stamp}.json`),
      JSON.stringify({ date, machine, rttMs: rtt, settings, independent, contended: contendedRows, keysLeft: keysRows }, null, 2) + '\n',
    );
    progress(`\nwrote results/throughput-${stamp}.{md,json}`);
  } finally {
    probe.disconnect();
    await server.stop();
  }
}

await main();

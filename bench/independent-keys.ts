/**
 * Per-entity locks: many acquire+release cycles in flight on ONE connection, each on a fresh name
 * (`order:<n>`), nothing ever contended. Shared by `bench/throughput.ts`, `bench/run.ts` and
 * `bench/profile-throughput.ts`.
 *
 * Timing on a small shared machine drifts by tens of percent within seconds, so the implementations run in
 * interleaved rounds: each round gives every implementation one short segment per (client, in-flight) cell, in an
 * order rotated by one and reversed on odd rounds, with a segment of the floor before the first and after each one;
 * an implementation's ratio to the floor in that round is to the mean of the floor segments just before and after it.
 * The tables give medians over rounds. The server is flushed after every
 * segment, so keys an implementation leaves with a TTL do not expire on a later segment's Redis CPU (their count is
 * measured by the keys-left section of `bench/throughput.ts`).
 */
import { randomUUID } from 'node:crypto';
import { createRequire } from 'node:module';
import { Redis } from 'ioredis';
import { createClient } from 'redis';
import { Redlock as SesameRedlock } from '@sesamecare-oss/redlock';
import { Mutex } from 'redis-semaphore';
import { createLock, IoredisAdapter, NodeRedisAdapter } from 'redlock-universal';
import { Holdfast } from './holdfast.js';
// the scripts and key layout as data, for the bare-scripts reference row (not the library's code path)
import { Keys } from '../src/keys.js';
import { scripts } from '../src/lua/scripts.gen.js';

const nodeRedis = (url: string) => createClient({ url });
export type NodeRedis = ReturnType<typeof nodeRedis>;
export type ClientKind = 'ioredis' | 'node-redis';

/** One connection of one client library, and a holdfast client on it. */
export interface Connection {
  kind: ClientKind;
  io?: Redis;
  nr?: NodeRedis;
  holdfast: Holdfast;
  close(): Promise<void>;
}

/** `HoldfastClass`: the shipped build's (bench/holdfast.ts) unless another is given. */
export async function connect(kind: ClientKind, url: string, HoldfastClass: typeof Holdfast = Holdfast): Promise<Connection> {
  if (kind === 'ioredis') {
    const io = new Redis(url);
    const holdfast = new HoldfastClass({ redis: io, prefix: 'bench:' });
    return {
      kind,
      io,
      holdfast,
      close: async () => {
        await holdfast.close();
        io.disconnect();
      },
    };
  }
  const nr = nodeRedis(url);
  nr.on('error', () => {});
  await nr.connect();
  const holdfast = new HoldfastClass({ redis: nr, prefix: 'bench:' });
  return {
    kind,
    nr,
    holdfast,
    close: async () => {
      await holdfast.close();
      nr.destroy();
    },
  };
}

/** One acquire+release on the fresh name `name`; `slot` is the in-flight loop running it (0 … inFlight−1). */
export type Cycle = (name: string, slot: number) => Promise<void>;

/** An implementation set up on one connection for one in-flight count. */
export interface Prepared {
  cycle: Cycle;
  /** Runs before every segment (the server is flushed between segments): state the cycles need. */
  prepare?(): Promise<void>;
}

export interface Implementation {
  id: string;
  /** What the table says about it. */
  note: string;
  /** Why it cannot run on this client, or undefined. */
  skip?(kind: ClientKind): string | undefined;
  setup(c: Connection, inFlight: number): Promise<Prepared | Cycle>;
}

export const prepared = (p: Prepared | Cycle): Prepared => (typeof p === 'function' ? { cycle: p } : p);

const LEASE = 30_000;
const CAD = "if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) else return 0 end";
/** The fenced floor's acquire: a token from the slot's counter and the lock in one step; the token, or false when taken. */
const FENCED_ACQUIRE = "local t = redis.call('incr', KEYS[2]) if redis.call('set', KEYS[1], ARGV[1], 'nx', 'px', ARGV[2]) then return t end return false";
/** node-redis command options without the client's per-command timer, as holdfast sends its own commands. */
const UNTIMED = Object.freeze({ timeout: 0 });
const require = createRequire(import.meta.url);

interface RedlockV4Lock {
  unlock(): Promise<unknown>;
}
type RedlockV4 = new (clients: unknown[], settings?: Record<string, number>) => {
  lock(resource: string, ttl: number): Promise<RedlockV4Lock>;
  on(event: string, listener: () => void): void;
};

const ioredisOnly = (what: string) => (kind: ClientKind) => (kind === 'ioredis' ? undefined : `${what} takes an ioredis client only`);

/**
 * holdfast Lock's own acquire and release scripts sent straight through the client with `EVALSHA` (the keys and
 * arguments the library sends), without the library around them: one acquire+release on `name`. The reference for
 * what the scripts' Redis work alone allows (`holdfast scripts, bare` here, `--bare` in bench/compare-builds.ts).
 */
export async function bareLockCycle(c: { io?: Redis | undefined; nr?: NodeRedis | undefined }, prefix: string): Promise<(name: string) => Promise<void>> {
  const keys = new Keys(prefix);
  const acquire = scripts['lock/acquire'];
  const release = scripts['lock/release'];
  const owners = `${randomUUID().slice(0, 22)}:`;
  let seq = 0;
  if (c.io) {
    const io = c.io;
    await io.script('LOAD', acquire.source);
    await io.script('LOAD', release.source);
    return async (name) => {
      const owner = owners + ++seq;
      const lock = keys.lock(name);
      const waiters = keys.lockWaiters(name);
      const token = await io.evalsha(acquire.sha, 3, lock, keys.fence(name), waiters, owner, LEASE, '0');
      if (typeof token !== 'number') throw new Error(`bare scripts: ${name} was taken`);
      await io.evalsha(release.sha, 2, lock, waiters, owner, '0', 'publish');
    };
  }
  // node-redis: sent as holdfast sends them (plain EVALSHA without the client's per-command timer)
  const nr = c.nr as NodeRedis;
  await nr.scriptLoad(acquire.source);
  await nr.scriptLoad(release.source);
  return async (name) => {
    const owner = owners + ++seq;
    const lock = keys.lock(name);
    const waiters = keys.lockWaiters(name);
    const token: unknown = await nr.sendCommand(['EVALSHA', acquire.sha, '3', lock, keys.fence(name), waiters, owner, String(LEASE), '0'], UNTIMED);
    if (typeof token !== 'number') throw new Error(`bare scripts: ${name} was taken`);
    await nr.sendCommand(['EVALSHA', release.sha, '2', lock, waiters, owner, '0', 'publish'], UNTIMED);
  };
}

export const implementations: Implementation[] = [
  {
    id: 'floor',
    note: 'SET NX PX 30000 + EVALSHA compare-and-delete (random UUID value)',
    async setup(c) {
      if (c.io) {
        const io = c.io;
        const sha = (await io.script('LOAD', CAD)) as string;
        return async (name) => {
          const token = randomUUID();
          if ((await io.set(name, token, 'PX', LEASE, 'NX')) !== 'OK') throw new Error(`floor: ${name} was taken`);
          await io.evalsha(sha, 1, name, token);
        };
      }
      const nr = c.nr as NodeRedis;
      const sha = await nr.scriptLoad(CAD);
      return async (name) => {
        const token = randomUUID();
        if ((await nr.set(name, token, { condition: 'NX', expiration: { type: 'PX', value: LEASE } })) !== 'OK') throw new Error(`floor: ${name} was taken`);
        await nr.evalSha(sha, { keys: [name], arguments: [token] });
      };
    },
  },
  {
    id: 'floor, no client timer',
    note:
      "the floor's two commands through node-redis' `sendCommand` with `{ timeout: 0 }`: without the timer node-redis " +
      "arms for every command by default, as holdfast sends its own (it bounds each call with one shared ticker): how much " +
      "of holdfast's lead on node-redis is that timer",
    skip: (kind) => (kind === 'node-redis' ? undefined : 'ioredis arms no timer per command: the floor itself'),
    async setup(c) {
      const nr = c.nr as NodeRedis;
      const sha = await nr.scriptLoad(CAD);
      return async (name) => {
        const token = randomUUID();
        if (((await nr.sendCommand(['SET', name, token, 'PX', String(LEASE), 'NX'], UNTIMED)) as unknown) !== 'OK') throw new Error(`floor: ${name} was taken`);
        await nr.sendCommand(['EVALSHA', sha, '1', name, token], UNTIMED);
      };
    },
  },
  {
    id: 'fenced floor',
    note:
      'the least a lock that mints a fencing token in the same step can do: one `EVALSHA` of `INCR` (a counter in the ' +
      "name's slot) + `SET NX PX` (random UUID value), then the floor's compare-and-delete (on node-redis without the " +
      "client's per-command timer): the Redis work of any fenced lock, the reference for Redis CPU per cycle (the floor " +
      'mints no token)',
    async setup(c) {
      const keys = new Keys('fenced:');
      if (c.io) {
        const io = c.io;
        const acquire = (await io.script('LOAD', FENCED_ACQUIRE)) as string;
        const release = (await io.script('LOAD', CAD)) as string;
        return async (name) => {
          const token = randomUUID();
          const lock = keys.lock(name);
          if (typeof (await io.evalsha(acquire, 2, lock, keys.fence(name), token, LEASE)) !== 'number') throw new Error(`fenced floor: ${name} was taken`);
          await io.evalsha(release, 1, lock, token);
        };
      }
      // node-redis: sent the way holdfast sends (no per-command timer, see the row above), so this is the least on both ends
      const nr = c.nr as NodeRedis;
      const acquire = await nr.scriptLoad(FENCED_ACQUIRE);
      const release = await nr.scriptLoad(CAD);
      return async (name) => {
        const token = randomUUID();
        const lock = keys.lock(name);
        if (typeof (await nr.sendCommand(['EVALSHA', acquire, '2', lock, keys.fence(name), token, String(LEASE)], UNTIMED)) !== 'number') throw new Error(`fenced floor: ${name} was taken`);
        await nr.sendCommand(['EVALSHA', release, '1', lock, token], UNTIMED);
      };
    },
  },
  {
    id: 'holdfast scripts, bare',
    note:
      "holdfast Lock's own acquire and release scripts sent straight through the client (`EVALSHA`, the same keys and " +
      'arguments; on node-redis without its per-command timer, as holdfast sends them), without the library around ' +
      'them: what any implementation with these Redis round trips can reach ' +
      '(a fencing token minted atomically with the lock takes a script where the floor sends a plain `SET`)',
    setup: (c) => bareLockCycle(c, 'bench:'),
  },
  {
    id: 'holdfast Lock, lease',
    note: '`lock(name).acquire({ lease: 30000 })`: no watchdog',
    async setup(c) {
      return async (name) => {
        const held = await c.holdfast.lock(name).acquire({ lease: LEASE });
        await held.release();
      };
    },
  },
  {
    id: 'holdfast Lock, watchdog',
    note: '`lock(name).acquire()`: watchdog lease 30 s',
    async setup(c) {
      return async (name) => {
        const held = await c.holdfast.lock(name).acquire();
        await held.release();
      };
    },
  },
  {
    id: 'holdfast FairLock',
    note: '`fairLock(name).acquire()`',
    async setup(c) {
      return async (name) => {
        const held = await c.holdfast.fairLock(name).acquire();
        await held.release();
      };
    },
  },
  {
    id: 'holdfast write lock',
    note: '`readWriteLock(name).writeLock().acquire()`',
    async setup(c) {
      return async (name) => {
        const held = await c.holdfast.readWriteLock(name).writeLock().acquire();
        await held.release();
      };
    },
  },
  {
    id: 'holdfast Semaphore, one per slot',
    note:
      'one 1-permit semaphore per in-flight loop, set up once, reused by every cycle of that loop (a semaphore keeps its ' +
      'permit count in Redis for good: one per entity would be a setup call and a key left per name, see the next row)',
    async setup(c, inFlight) {
      const sems = Array.from({ length: inFlight }, (_, i) => c.holdfast.semaphore(`sem-slot:${i}`));
      return {
        prepare: async () => void (await Promise.all(sems.map((s) => s.trySetPermits(1)))),
        cycle: async (_name, slot) => {
          const permits = await (sems[slot] as (typeof sems)[number]).acquire(1);
          await permits.release();
        },
      };
    },
  },
  {
    id: 'holdfast Semaphore, per name',
    note: '`semaphore(name)`: `trySetPermits(1)` + `acquire(1)` + release per name; leaves the permit key behind',
    async setup(c) {
      return async (name) => {
        const sem = c.holdfast.semaphore(name);
        await sem.trySetPermits(1);
        const permits = await sem.acquire(1);
        await permits.release();
      };
    },
  },
  {
    id: 'redis-semaphore Mutex',
    note: '`new Mutex(client, name, { lockTimeout: 30000 })` per name (refreshes itself like a watchdog)',
    skip: ioredisOnly('redis-semaphore 5'),
    async setup(c) {
      const io = c.io as Redis;
      return async (name) => {
        const mutex = new Mutex(io, name, { lockTimeout: LEASE });
        await mutex.acquire();
        await mutex.release();
      };
    },
  },
  {
    id: 'redlock 4',
    note: '`redlock.lock(name, 30000)`, one client',
    skip: (kind) => (kind === 'ioredis' ? undefined : 'redlock 4 calls evalsha with a callback (node_redis 3 style), which node-redis ≥ 4 does not take'),
    async setup(c) {
      const Redlock = require('redlock') as RedlockV4;
      const redlock = new Redlock([c.io]);
      redlock.on('clientError', () => {});
      return async (name) => {
        const lock = await redlock.lock(name, LEASE);
        await lock.unlock();
      };
    },
  },
  {
    id: '@sesamecare-oss/redlock',
    note: '`redlock.acquire([name], 30000)`, one client',
    skip: ioredisOnly('@sesamecare-oss/redlock 1'),
    async setup(c) {
      const redlock = new SesameRedlock([c.io as Redis]);
      redlock.on('error', () => {});
      return async (name) => {
        const lock = await redlock.acquire([name], LEASE);
        await lock.release();
      };
    },
  },
  {
    id: 'redlock-universal',
    note: '`createLock({ adapter, key: name, ttl: 30000 })` per name',
    async setup(c) {
      const adapter = c.io ? new IoredisAdapter(c.io) : new NodeRedisAdapter(c.nr);
      return async (name) => {
        const lock = createLock({ adapter, key: name, ttl: LEASE });
        const handle = await lock.acquire();
        await lock.release(handle);
      };
    },
  },
];

// ---------------------------------------------------------------- one segment

let sequence = 0;
/** A name never used before in this process. */
export const freshName = (): string => `order:${++sequence}`;

export interface Segment {
  /** Cycles completed inside the window ÷ the window. */
  cyclesPerSec: number;
  /** Every cycle completed, also those that finished after the window (the loops drain). */
  cycles: number;
  /** Client CPU (user + system) over the segment and its drain ÷ cycles, µs. */
  clientCpuUs: number;
  /** Redis CPU (used_cpu_user + used_cpu_sys) over the segment and its drain ÷ cycles, µs. */
  redisCpuUs: number;
  errors: number;
  firstError?: string;
}

/** used_cpu_user + used_cpu_sys of the server, in µs. */
export async function redisCpu(probe: Redis): Promise<number> {
  const info = await probe.info('cpu');
  const field = (name: string): number => Number(new RegExp(`^${name}:([\\d.]+)`, 'm').exec(info)?.[1] ?? NaN);
  return (field('used_cpu_user') + field('used_cpu_sys')) * 1e6;
}

const DRAIN_LIMIT_MS = 10_000;

/** `inFlight` loops run `cycle` on fresh names for `ms`. `probe` is a separate connection for INFO. */
export async function segment(cycle: Cycle, inFlight: number, ms: number, probe: Redis): Promise<Segment> {
  const redis0 = await redisCpu(probe);
  const cpu0 = process.cpuUsage();
  const t0 = performance.now();
  const end = t0 + ms;
  let inWindow = 0;
  let cycles = 0;
  let errors = 0;
  let firstError: string | undefined;
  let stuck = inFlight;
  const loops = Promise.all(
    Array.from({ length: inFlight }, async (_, slot) => {
      while (performance.now() < end) {
        try {
          await cycle(freshName(), slot);
          cycles++;
          if (performance.now() <= end) inWindow++;
        } catch (error) {
          errors++;
          firstError ??= String(error);
        }
      }
      stuck--;
    }),
  );
  // a cycle that never settles (a wait nobody wakes) must not hang the benchmark: count its loop as an error
  let timer: NodeJS.Timeout | undefined;
  await Promise.race([loops, new Promise((resolve) => (timer = setTimeout(resolve, ms + DRAIN_LIMIT_MS)))]);
  clearTimeout(timer);
  if (stuck > 0) {
    errors += stuck;
    firstError ??= `${stuck} loops still in a cycle ${DRAIN_LIMIT_MS} ms after the window`;
  }
  const cpu = process.cpuUsage(cpu0);
  const redis1 = await redisCpu(probe);
  const result: Segment = {
    cyclesPerSec: (inWindow / ms) * 1000,
    cycles,
    clientCpuUs: cycles ? (cpu.user + cpu.system) / cycles : NaN,
    redisCpuUs: cycles ? (redis1 - redis0) / cycles : NaN,
    errors,
  };
  if (firstError !== undefined) result.firstError = firstError;
  return result;
}

// ---------------------------------------------------------------- interleaved rounds

export interface IndependentKeysOptions {
  url: string;
  /** A connection for INFO/FLUSHALL, not used by the implementations. */
  probe: Redis;
  clients?: ClientKind[];
  inFlight?: number[];
  rounds?: number;
  segmentMs?: number;
  /** Only the implementations whose id matches (the floor always runs: every ratio needs it). */
  only?: RegExp;
  /** Progress lines (stderr by default). */
  progress?: (line: string) => void;
}

export interface IndependentKeysRow {
  client: ClientKind;
  inFlight: number;
  implementation: string;
  /** Medians over rounds. */
  cyclesPerSec: number;
  ratioToFloor: number;
  ratioIqr: [number, number];
  clientCpuUs: number;
  redisCpuUs: number;
  errors: number;
  firstError?: string;
  perRound: Segment[];
}

export interface IndependentKeysResult {
  rounds: number;
  segmentMs: number;
  rows: IndependentKeysRow[];
  skipped: { client: ClientKind; implementation: string; reason: string }[];
}

export const quantile = (xs: readonly number[], q: number): number => {
  const s = xs.filter((x) => !Number.isNaN(x)).sort((a, b) => a - b);
  return s.length === 0 ? NaN : (s[Math.min(s.length - 1, Math.floor(s.length * q))] as number);
};
export const median = (xs: readonly number[]): number => {
  const s = xs.filter((x) => !Number.isNaN(x)).sort((a, b) => a - b);
  if (s.length === 0) return NaN;
  const m = s.length >> 1;
  return s.length % 2 ? (s[m] as number) : ((s[m - 1] as number) + (s[m] as number)) / 2;
};

/** Round r's order: rotated by r, reversed on odd rounds (ABBA-like, so no implementation always follows another). */
export function roundOrder<T>(items: readonly T[], round: number): T[] {
  const k = round % items.length;
  const rotated = [...items.slice(k), ...items.slice(0, k)];
  return round % 2 ? rotated.reverse() : rotated;
}

export async function independentKeys(options: IndependentKeysOptions): Promise<IndependentKeysResult> {
  const { url, probe } = options;
  const clients = options.clients ?? ['ioredis', 'node-redis'];
  const levels = options.inFlight ?? [8, 64, 256];
  const rounds = options.rounds ?? 3;
  const segmentMs = options.segmentMs ?? 200;
  const progress = options.progress ?? ((line: string) => void process.stderr.write(line + '\n'));
  const chosen = implementations.filter((i) => i.id === 'floor' || !options.only || options.only.test(i.id));
  const skipped: IndependentKeysResult['skipped'] = [];

  // One connection per client library, shared by every implementation (as an application would have it).
  interface Run {
    impl: Implementation;
    run: Prepared;
    segments: Segment[];
    /** Per round: cycles/s ÷ the mean of the floor's segments just before and after. */
    ratios: number[];
  }
  const cells: { client: ClientKind; inFlight: number; runs: Run[] }[] = [];
  const connections: Connection[] = [];
  try {
    for (const kind of clients) {
      const c = await connect(kind, url);
      connections.push(c);
      const runnable = chosen.filter((impl) => {
        const reason = impl.skip?.(kind);
        if (reason !== undefined) skipped.push({ client: kind, implementation: impl.id, reason });
        return reason === undefined;
      });
      for (const inFlight of levels) {
        const runs: (typeof cells)[number]['runs'] = [];
        for (const impl of runnable) {
          try {
            runs.push({ impl, run: prepared(await impl.setup(c, inFlight)), segments: [], ratios: [] });
          } catch (error) {
            skipped.push({ client: kind, implementation: impl.id, reason: `setup failed: ${String(error)}` });
          }
        }
        cells.push({ client: kind, inFlight, runs });
      }
    }
    // warm-up: scripts loaded, JIT warm, once per implementation and client
    for (const cell of cells.filter((x) => x.inFlight === levels[Math.floor(levels.length / 2)])) {
      for (const { run } of cell.runs) {
        await run.prepare?.();
        await segment(run.cycle, cell.inFlight, Math.min(200, segmentMs), probe);
        await probe.flushall('SYNC');
      }
    }
    const run = async (r: Run, inFlight: number): Promise<Segment> => {
      await r.run.prepare?.();
      const result = await segment(r.run.cycle, inFlight, segmentMs, probe);
      await probe.flushall('SYNC');
      r.segments.push(result);
      return result;
    };
    for (let round = 0; round < rounds; round++) {
      for (const cell of cells) {
        const floor = cell.runs.find((r) => r.impl.id === 'floor');
        if (!floor) throw new Error('the floor did not set up: no ratios without it');
        // the floor between every two implementations: each one's ratio is to the mean of the floor just before and after
        let before = await run(floor, cell.inFlight);
        for (const r of roundOrder(cell.runs.filter((x) => x !== floor), round)) {
          const own = await run(r, cell.inFlight);
          const after = await run(floor, cell.inFlight);
          r.ratios.push(own.cyclesPerSec / ((before.cyclesPerSec + after.cyclesPerSec) / 2));
          before = after;
        }
      }
      progress(`independent keys: round ${round + 1}/${rounds} done`);
    }
  } finally {
    for (const c of connections) await c.close();
  }

  const rows: IndependentKeysRow[] = [];
  for (const cell of cells) {
    for (const run of cell.runs) {
      const ratios = run.impl.id === 'floor' ? [1] : run.ratios;
      const errors = run.segments.reduce((a, s) => a + s.errors, 0);
      const row: IndependentKeysRow = {
        client: cell.client,
        inFlight: cell.inFlight,
        implementation: run.impl.id,
        cyclesPerSec: median(run.segments.map((s) => s.cyclesPerSec)),
        ratioToFloor: median(ratios),
        ratioIqr: [quantile(ratios, 0.25), quantile(ratios, 0.75)],
        clientCpuUs: median(run.segments.map((s) => s.clientCpuUs)),
        redisCpuUs: median(run.segments.map((s) => s.redisCpuUs)),
        errors,
        perRound: run.segments,
      };
      const firstError = run.segments.find((s) => s.firstError)?.firstError;
      if (firstError !== undefined) row.firstError = firstError;
      rows.push(row);
    }
  }
  return { rounds, segmentMs, rows, skipped };
}

// ---------------------------------------------------------------- formatting

export const fmt = (n: number, digits = 0): string =>
  Number.isFinite(n) ? n.toLocaleString('en-US', { maximumFractionDigits: digits, minimumFractionDigits: digits }) : '—';

export function table(header: string[], rows: string[][]): string {
  return [`| ${header.join(' | ')} |`, `|${header.map((_, i) => (i === 0 ? '---' : '---:')).join('|')}|`, ...rows.map((r) => `| ${r.join(' | ')} |`)].join('\n');
}

/** Markdown: one table per client, rows grouped by in-flight count. */
export function formatIndependentKeys(result: IndependentKeysResult): string {
  const out: string[] = [];
  out.push(
    `Each cycle: acquire + release on a fresh name, nothing contended; N cycles in flight on one connection. ` +
      `${result.rounds} interleaved rounds of ${fmt(result.segmentMs)} ms per implementation and cell; medians over rounds. ` +
      '× floor: median over rounds of (cycles/s ÷ the mean cycles/s of the floor segments run just before and just after it), with its interquartile range. ' +
      'Client CPU: this process\' `process.cpuUsage()` ÷ cycles; Redis CPU: `INFO cpu` used_cpu_user + used_cpu_sys of the dedicated server ÷ cycles (both µs); Redis CPU ÷ floor: of the medians, within the cell.\n',
  );
  const clients = [...new Set(result.rows.map((r) => r.client))];
  for (const client of clients) {
    out.push(`### ${client}\n`);
    out.push(
      table(
        ['implementation', 'in flight', 'cycles/s', '× floor', 'IQR', 'client CPU µs/cycle', 'Redis CPU µs/cycle', 'Redis CPU ÷ floor', 'errors'],
        result.rows
          .filter((r) => r.client === client)
          .map((r) => [
            r.implementation,
            String(r.inFlight),
            fmt(r.cyclesPerSec),
            fmt(r.ratioToFloor, 2),
            `${fmt(r.ratioIqr[0], 2)}–${fmt(r.ratioIqr[1], 2)}`,
            fmt(r.clientCpuUs, 1),
            fmt(r.redisCpuUs, 1),
            fmt(r.redisCpuUs / (result.rows.find((f) => f.client === r.client && f.inFlight === r.inFlight && f.implementation === 'floor')?.redisCpuUs ?? NaN), 2),
            r.errors ? `${fmt(r.errors)} (${(r.firstError ?? '').slice(0, 80)})` : '0',
          ]),
      ) + '\n',
    );
  }
  if (result.skipped.length) {
    out.push('Skipped: ' + result.skipped.map((s) => `${s.implementation} on ${s.client} (${s.reason})`).join('; ') + '.\n');
  }
  out.push('Implementations: ' + implementations.map((i) => `**${i.id}**: ${i.note}`).join('; ') + '.\n');
  return out.join('\n');
}

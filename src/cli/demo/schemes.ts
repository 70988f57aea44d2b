/**
 * Five common ways to build a lock on Redis, each fixing the previous one's best-known flaw, and holdfast, as the
 * demo's workers run them. Each scheme sends exactly its textbook commands; the only addition is bookkeeping done
 * in the same atomic step (an `audit` key recording which worker acquired last), so the demo can tell when a
 * release deleted *another* worker's lock.
 *
 * The scripts here are the demo's own, inline (they are not part of the library's script set).
 *
 * @module
 */
import { randomUUID } from 'node:crypto';
import { AcquireTimeoutError, LockNotHeldError, RedisConnectionError, type Holdfast, type RedisTransport } from '../../index.js';

/** The schemes, each fixing the previous one's best-known flaw, then holdfast. */
export const SCHEME_IDS = ['no-ttl', 'setnx-expire', 'same-value', 'get-then-del', 'lua-delete', 'holdfast'] as const;
export type SchemeId = (typeof SCHEME_IDS)[number];

/** The faults every scheme meets. */
export const FAULT_IDS = ['crash', 'pause', 'slow-release'] as const;
export type FaultId = (typeof FAULT_IDS)[number];

/** What each scheme is: a short description, its commands, and the flaw the demo shows. */
export const SCHEMES: Record<SchemeId, { what: string; lock: string; unlock: string; flaw: string }> = {
  'no-ttl': { what: 'SET NX, no expiry', lock: 'SET k 123 NX', unlock: 'DEL k', flaw: "no expiry: a dead holder's lock stays forever" },
  'setnx-expire': {
    what: 'SETNX, then EXPIRE',
    lock: 'SETNX k 123, then EXPIRE k',
    unlock: 'DEL k',
    flaw: 'two commands: a death between them leaves a lock with no expiry',
  },
  'same-value': {
    what: 'SET NX PX, one value for all',
    lock: 'SET k 123 NX PX lease',
    unlock: 'DEL k',
    flaw: "every holder's value is 123: a late DEL deletes the next holder's lock",
  },
  'get-then-del': {
    what: 'unique value, GET then DEL',
    lock: 'SET k uuid NX PX lease',
    unlock: 'GET k; if ours: DEL k',
    flaw: 'GET and DEL are two steps: the lock can change hands between them',
  },
  'lua-delete': {
    what: 'unique value, Lua delete',
    lock: 'SET k uuid NX PX lease',
    unlock: 'Lua: if GET k == uuid then DEL k',
    flaw: 'no renewal, no fencing: a holder past its lease keeps writing',
  },
  holdfast: {
    what: 'lease, watchdog, fencing',
    lock: 'holdfast lock: lease + watchdog + fencing token',
    unlock: 'owner-checked Lua release',
    flaw: '',
  },
};

/** What the faults do, in a line. */
export const FAULTS: Record<FaultId, string> = {
  crash: 'the worker dies (SIGKILL) right after the command that granted it the lock (for setnx-expire: between SETNX and EXPIRE)',
  pause: 'the worker stops (a stop-the-world pause, like a long GC) between reading and writing the counter, for longer than the lease',
  'slow-release': "the worker's link turns slow: from then on each of its releases is delayed for longer than the lease, just before the command that deletes the lock",
};

/** The keys of one run. */
export interface DemoKeys {
  /** The lock key of the five schemes. */
  lock: string;
  /** Bookkeeping: the id of the worker that acquired last. */
  audit: string;
  /** The shared counter. */
  counter: string;
  /** The fenced counter's highest accepted token (holdfast only). */
  fence: string;
}

/** How one release ended. */
export type ReleaseOutcome = 'released' | 'deleted-other' | 'expired' | 'refused';

/** One acquisition of the lock. */
export interface Session {
  /** Reads the counter; `null` when the fenced counter refused a stale token. */
  read(): Promise<number | null>;
  /** Writes the counter; false when the fenced counter refused a stale token. */
  write(value: number): Promise<boolean>;
  /** True when the holder already knows it lost the lock (holdfast's signal). */
  readonly lost: boolean;
  /** Releases, waiting `delayMs` just before the command that deletes the lock. */
  release(delayMs: number): Promise<ReleaseOutcome>;
}

/** Everything a scheme needs for one acquisition. */
export interface SchemeContext {
  transport: RedisTransport;
  keys: DemoKeys;
  /** This worker's id, e.g. `w0`. */
  worker: string;
  /** The lease (the expiring schemes' TTL and holdfast's watchdog lease), ms. */
  leaseMs: number;
  /** The busy-wait sleep of the five schemes between attempts, ms. */
  retryMs: number;
  /** Epoch ms after which waiting gives up (`acquire` returns `null`). */
  deadline: number;
  /** The holdfast client for the `holdfast` scheme. */
  holdfast?: Holdfast | undefined;
  /** Called right after the command that granted the lock, before anything else: the crash fault's spot. */
  onGranted: () => void;
}

// SET NX (PX), and record who acquired — one atomic step, the same as the bare SET for the lock.
const ACQUIRE = `local r
if ARGV[3] == '' then r = redis.call('set', KEYS[1], ARGV[1], 'NX') else r = redis.call('set', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[3]) end
if r then redis.call('set', KEYS[2], ARGV[2]) return 1 end
return 0`;
// DEL, and say who had acquired last at that instant.
const DEL = `local who = redis.call('get', KEYS[2]) or ''
return {redis.call('del', KEYS[1]), who}`;
// The lua-delete scheme's compare-and-delete, and who had acquired last.
const COMPARE_AND_DELETE = `local who = redis.call('get', KEYS[2]) or ''
if redis.call('get', KEYS[1]) == ARGV[1] then return {redis.call('del', KEYS[1]), who} end
return {0, who}`;

/**
 * The demo's fenced counter: every access carries the holder's fencing token; an access with a token lower than one
 * already seen is refused. Reads are fenced too: a holder's read-modify-write then cannot interleave with a newer
 * holder's (a write-only fence would let an old holder write between a new holder's read and write).
 * KEYS[1] counter, KEYS[2] highest token seen; ARGV[1] token, ARGV[2] value to write ('' = read).
 * Returns {1, value} when accepted, {0, highest token} when refused.
 */
export const FENCED_ACCESS = `local t = tonumber(ARGV[1])
local last = tonumber(redis.call('get', KEYS[2]) or '0')
if t < last then return {0, last} end
if t > last then redis.call('set', KEYS[2], t) end
if ARGV[2] ~= '' then redis.call('set', KEYS[1], ARGV[2]) return {1, tonumber(ARGV[2])} end
return {1, tonumber(redis.call('get', KEYS[1]) or '0')}`;

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));
const epoch = () => performance.timeOrigin + performance.now();

/** A plain (unfenced) counter session over one of the five schemes' locks. */
function plainSession(ctx: SchemeContext, release: (delayMs: number) => Promise<ReleaseOutcome>): Session {
  return {
    lost: false,
    read: async () => Number((await ctx.transport.command(['GET', ctx.keys.counter], ctx.keys.counter)) ?? 0),
    write: async (value) => {
      await ctx.transport.command(['SET', ctx.keys.counter, String(value)], ctx.keys.counter);
      return true;
    },
    release,
  };
}

/** DEL (after `delayMs`), telling whether the deleted key was someone else's. */
async function del(ctx: SchemeContext, delayMs: number): Promise<ReleaseOutcome> {
  if (delayMs > 0) await sleep(delayMs);
  const [n, who] = (await ctx.transport.eval(DEL, [ctx.keys.lock, ctx.keys.audit], [])) as [number, string];
  return Number(n) === 0 ? 'expired' : who === ctx.worker ? 'released' : 'deleted-other';
}

/** SET NX [PX] until it succeeds or the deadline passes. */
async function spin(ctx: SchemeContext, value: string, pxMs: number | undefined): Promise<boolean> {
  for (;;) {
    const ok = Number(await ctx.transport.eval(ACQUIRE, [ctx.keys.lock, ctx.keys.audit], [value, ctx.worker, pxMs === undefined ? '' : String(pxMs)]));
    if (ok === 1) return true;
    if (epoch() + ctx.retryMs > ctx.deadline) return false;
    await sleep(ctx.retryMs);
  }
}

/** One acquisition with the given scheme: a session, or `null` when the deadline passed while waiting. */
export async function acquire(scheme: SchemeId, ctx: SchemeContext): Promise<Session | null> {
  switch (scheme) {
    case 'no-ttl': {
      // SET NX, then DEL. No expiry: a holder that dies never lets go.
      if (!(await spin(ctx, '123', undefined))) return null;
      ctx.onGranted();
      return plainSession(ctx, (delay) => del(ctx, delay));
    }
    case 'setnx-expire': {
      // SETNX, then EXPIRE in a second command. A death between the two leaves a lock with no expiry.
      if (!(await spin(ctx, '123', undefined))) return null;
      ctx.onGranted();
      await ctx.transport.command(['PEXPIRE', ctx.keys.lock, String(ctx.leaseMs)], ctx.keys.lock);
      return plainSession(ctx, (delay) => del(ctx, delay));
    }
    case 'same-value': {
      // SET NX PX, one atomic command; but every holder's value is "123", so DEL deletes whoever's lock is there.
      if (!(await spin(ctx, '123', ctx.leaseMs))) return null;
      ctx.onGranted();
      return plainSession(ctx, (delay) => del(ctx, delay));
    }
    case 'get-then-del': {
      // A unique value; GET, compare, then DEL — two steps, with a gap between them.
      const mine = randomUUID();
      if (!(await spin(ctx, mine, ctx.leaseMs))) return null;
      ctx.onGranted();
      return plainSession(ctx, async (delay) => {
        const value = await ctx.transport.command(['GET', ctx.keys.lock], ctx.keys.lock);
        if (value !== mine) return 'expired';
        return del(ctx, delay);
      });
    }
    case 'lua-delete': {
      // A unique value and a Lua compare-and-delete. No renewal and no fencing.
      const mine = randomUUID();
      if (!(await spin(ctx, mine, ctx.leaseMs))) return null;
      ctx.onGranted();
      return plainSession(ctx, async (delay) => {
        if (delay > 0) await sleep(delay);
        const [n] = (await ctx.transport.eval(COMPARE_AND_DELETE, [ctx.keys.lock, ctx.keys.audit], [mine])) as [number, string];
        return Number(n) === 1 ? 'released' : 'expired';
      });
    }
    case 'holdfast': {
      const holdfast = ctx.holdfast;
      if (!holdfast) throw new Error('internal: the holdfast scheme needs a holdfast client');
      let held;
      try {
        held = await holdfast.lock('counter').acquire({ timeout: Math.max(0, Math.floor(ctx.deadline - epoch())) });
      } catch (error) {
        if (error instanceof AcquireTimeoutError) return null;
        // at the very end of the wait the last attempt gets a budget of a few ms; a late reply then surfaces as a
        // connection error rather than a timeout
        if (error instanceof RedisConnectionError && epoch() >= ctx.deadline) return null;
        throw error;
      }
      ctx.onGranted();
      const token = held.token;
      const fenced = async (value: string) =>
        (await ctx.transport.eval(FENCED_ACCESS, [ctx.keys.counter, ctx.keys.fence], [token, value])) as [number, number];
      return {
        get lost() {
          return held.lost;
        },
        read: async () => {
          const [ok, value] = await fenced('');
          return Number(ok) === 1 ? Number(value) : null;
        },
        write: async (value) => Number((await fenced(String(value)))[0]) === 1,
        release: async (delay) => {
          if (delay > 0) await sleep(delay);
          try {
            await held.release();
            return 'released';
          } catch (error) {
            if (error instanceof LockNotHeldError) return 'refused';
            throw error;
          }
        },
      };
    }
  }
}

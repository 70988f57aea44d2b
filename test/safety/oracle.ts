/**
 * The protected resource, on its own redis-server that no fault touches:
 *
 * - a **fenced resource**: a counter behind a Lua guard that refuses any read or write whose fencing token is older
 *   than the newest one it has seen (or equal to it but from another grant). Reads register their token too, so a
 *   stale holder's read-modify-write cannot interleave with a newer holder's (fencing at the write alone would let
 *   `A reads, B reads, A writes, B writes` lose A's update). Every decision is logged in order.
 * - an **unfenced shadow**: the same read-modify-write on a plain key, no token check, each write logged with the
 *   token it carried: it shows what fencing prevented (stale writes landing, lost updates).
 *
 * Redis runs each script alone, so the logs are the resource's own total order: no clock is involved.
 *
 * @module
 */
import type { Redis } from 'ioredis';
import type { FencedOp, ResourceState, ShadowWrite } from './checker.js';

/**
 * KEYS[1] hash {t = newest token seen, g = its grant}, KEYS[2] the counter, KEYS[3] the decision log.
 * ARGV[1] token, ARGV[2] grant, ARGV[3] 'r' or 'w', ARGV[4] value to write.
 * Returns {1, counter} for an accepted read, {1, 0} for an accepted write, {0, newest token} for a refusal.
 */
const FENCED = `
local t = tonumber(redis.call('hget', KEYS[1], 't') or '-1')
local g = redis.call('hget', KEYS[1], 'g') or ''
local tok = tonumber(ARGV[1])
local ok = tok > t or (tok == t and g == ARGV[2])
redis.call('rpush', KEYS[3], ARGV[3] .. ',' .. ARGV[1] .. ',' .. ARGV[2] .. ',' .. (ok and '1' or '0'))
if not ok then return {0, t} end
redis.call('hset', KEYS[1], 't', tok, 'g', ARGV[2])
if ARGV[3] == 'w' then
  redis.call('set', KEYS[2], ARGV[4])
  return {1, 0}
end
return {1, tonumber(redis.call('get', KEYS[2]) or '0')}
`;

/** KEYS[1] the counter, KEYS[2] the shadow log. ARGV[1] value, ARGV[2] token, ARGV[3] grant. */
const SHADOW_WRITE = `
redis.call('set', KEYS[1], ARGV[1])
redis.call('rpush', KEYS[2], ARGV[2] .. ',' .. ARGV[3])
return 1
`;

const keys = (lock: string) => ({
  fence: `oracle:{${lock}}:fence`,
  counter: `oracle:{${lock}}:fc`,
  log: `oracle:{${lock}}:flog`,
  shadow: `oracle:{${lock}}:uc`,
  shadowLog: `oracle:{${lock}}:ulog`,
});

/** The resource as a worker (or the runner) sees it. */
export class Oracle {
  constructor(readonly redis: Redis) {}

  /** Fenced read: the counter, or `null` when the token is refused. */
  async read(lock: string, token: number, grant: string): Promise<number | null> {
    const k = keys(lock);
    const [ok, value] = (await this.redis.eval(FENCED, 3, k.fence, k.counter, k.log, token, grant, 'r', '')) as [number, number];
    return ok === 1 ? value : null;
  }

  /** Fenced write: true when accepted. */
  async write(lock: string, token: number, grant: string, value: number): Promise<boolean> {
    const k = keys(lock);
    const [ok] = (await this.redis.eval(FENCED, 3, k.fence, k.counter, k.log, token, grant, 'w', value)) as [number, number];
    return ok === 1;
  }

  /** Unfenced read of the shadow counter. */
  async shadowRead(lock: string): Promise<number> {
    return Number((await this.redis.get(keys(lock).shadow)) ?? '0');
  }

  /** Unfenced write of the shadow counter (always applied), logged with its token. */
  async shadowWrite(lock: string, token: number, grant: string, value: number): Promise<void> {
    const k = keys(lock);
    await this.redis.eval(SHADOW_WRITE, 2, k.shadow, k.shadowLog, value, token, grant);
  }

  /** Everything the checker needs, read at the end of a run. */
  async state(lock: string): Promise<ResourceState> {
    const k = keys(lock);
    const [log, shadowLog, fc, uc] = await Promise.all([
      this.redis.lrange(k.log, 0, -1),
      this.redis.lrange(k.shadowLog, 0, -1),
      this.redis.get(k.counter),
      this.redis.get(k.shadow),
    ]);
    const fenced: FencedOp[] = log.map((line) => {
      const [op, token, grant, ok] = line.split(',');
      return { op: op === 'w' ? 'w' : 'r', token: Number(token), grant: grant ?? '', ok: ok === '1' };
    });
    const shadow: ShadowWrite[] = shadowLog.map((line) => {
      const [token, grant] = line.split(',');
      return { token: Number(token), grant: grant ?? '' };
    });
    return { fenced, shadow, fencedCounter: Number(fc ?? '0'), unfencedCounter: Number(uc ?? '0') };
  }
}

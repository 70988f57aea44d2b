--[[
  End a run of a scheduled job: the lock stays until lockAtLeastFor after the run started, then lapses; the run is
  recorded as the job's last (for `holdfast jobs`).
  KEYS[1] the job hash (see claim-1.lua)
  ARGV[1] owner id of the run
  ARGV[2] lockAtLeastFor in ms
  ARGV[3] how long the run took, in ms (measured where it ran)
  ARGV[4] the run's error message, '' when it succeeded
  ARGV[5] how long the hash (the job's record) is kept after a run, in ms
  Sets rt = the run's tick, rf = its fingerprint, rs = started at, rd = duration, re = error, rx = finished at (Redis
  ms), rn = runs finished, ec = failed runs in a row.
  Returns 1 when this run still held the lock, 0 when it had lapsed (lockAtMostFor) or was taken.
  @args [owner: string, lockAtLeastForMs: number, durationMs: number, error: string, recordTtlMs: number]
  @reply 0 | 1
]]
--- @include "redis-now"
local now = redis_now()
local v = redis.call('hmget', KEYS[1], 'o', 's', 't', 'f', 'ec')
if v[1] ~= ARGV[1] then
  return 0
end
local lockedUntil = math.max(now, tonumber(v[2]) + tonumber(ARGV[2]))
local failed = ARGV[4] ~= ''
redis.call('hset', KEYS[1], 'u', lockedUntil, 'rt', v[3], 'rf', v[4] or '', 'rs', v[2], 'rd', ARGV[3], 're', ARGV[4],
  'rx', now, 'ec', failed and ((tonumber(v[5]) or 0) + 1) or 0)
redis.call('hincrby', KEYS[1], 'rn', 1)
redis.call('hdel', KEYS[1], 'o', 'f')
redis.call('pexpire', KEYS[1], math.max(lockedUntil - now, tonumber(ARGV[5])))
return 1

--[[
  Claim one tick of a scheduled job (ShedLock semantics plus a per-tick record).
  KEYS[1] the job hash: t = last claimed tick, tu = until when t counts (Redis ms), o = running owner,
          s = started at, u = locked until (Redis ms), f = the running instance's fingerprint, c = its schedule,
          p/pu = t/tu before this claim (what an abandon restores), r* = the last finished run (see finish-1.lua)
  ARGV[1] the tick: its scheduled time in epoch ms (an identifier every instance computes alike, not a clock reading)
  ARGV[2] owner id of this run
  ARGV[3] lockAtMostFor in ms: the lock lapses then even if the run never finishes (a crashed instance)
  ARGV[4] tick memory in ms: how long this tick counts as claimed at least
  ARGV[5] the claiming instance's fingerprint (a short hash, shown by `holdfast jobs`)
  ARGV[6] the job's schedule, for `holdfast jobs` ('' leaves the last one)
  ARGV[7] how long the hash (the job's record) is kept after a claim, in ms
  Returns {1, lockAtMostFor} when claimed; {0, 0} when this tick (or a later one) was already claimed;
  {0, ms} when an earlier run still holds the lock (or lockAtLeastFor has not passed) for ms more.
  @args [tick: string, owner: string, lockAtMostForMs: number, tickMemoryMs: number, fingerprint: string, schedule: string, recordTtlMs: number]
  @reply [1, lockAtMostForMs: number] | [0, lockedForMs: number]
]]
--- @include "redis-now"
local now = redis_now()
local tick = tonumber(ARGV[1])
local atMost = tonumber(ARGV[3])
local memory = tonumber(ARGV[4])
local v = redis.call('hmget', KEYS[1], 't', 'tu', 'u')
local last = tonumber(v[1])
local lastUntil = tonumber(v[2])
if last and last >= tick and (lastUntil == nil or lastUntil > now) then
  return {0, 0}
end
local lockedUntil = tonumber(v[3])
if lockedUntil and lockedUntil > now then
  return {0, lockedUntil - now}
end
redis.call('hset', KEYS[1], 'p', v[1] or '', 'pu', v[2] or '', 't', ARGV[1], 'tu', now + memory, 'o', ARGV[2], 's', now,
  'u', now + atMost, 'f', ARGV[5])
if ARGV[6] ~= '' then
  redis.call('hset', KEYS[1], 'c', ARGV[6])
end
redis.call('pexpire', KEYS[1], math.max(atMost, memory, tonumber(ARGV[7])))
return {1, atMost}

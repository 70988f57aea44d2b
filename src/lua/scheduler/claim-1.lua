--[[
  Claim one tick of a scheduled job (ShedLock semantics plus a per-tick record).
  KEYS[1] the job hash {t = last claimed tick, o = running owner, s = started at, u = locked until (Redis ms)}
  ARGV[1] the tick: its scheduled time in epoch ms (an identifier every instance computes alike, not a clock reading)
  ARGV[2] owner id of this run
  ARGV[3] lockAtMostFor in ms: the lock lapses then even if the run never finishes (a crashed instance)
  ARGV[4] how long the hash is kept at least, in ms (tick memory)
  Returns {1, lockAtMostFor} when claimed; {0, 0} when this tick (or a later one) was already claimed;
  {0, ms} when an earlier run still holds the lock (or lockAtLeastFor has not passed) for ms more.
]]
local time = redis.call('time')
local now = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
local tick = tonumber(ARGV[1])
local atMost = tonumber(ARGV[3])
local v = redis.call('hmget', KEYS[1], 't', 'u')
local last = tonumber(v[1])
if last and last >= tick then
  return {0, 0}
end
local lockedUntil = tonumber(v[2])
if lockedUntil and lockedUntil > now then
  return {0, lockedUntil - now}
end
redis.call('hset', KEYS[1], 't', ARGV[1], 'o', ARGV[2], 's', now, 'u', now + atMost)
redis.call('pexpire', KEYS[1], math.max(atMost, tonumber(ARGV[4])))
return {1, atMost}

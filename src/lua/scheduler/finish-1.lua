--[[
  End a run of a scheduled job: the lock stays until lockAtLeastFor after the run started, then lapses.
  KEYS[1] the job hash
  ARGV[1] owner id of the run
  ARGV[2] lockAtLeastFor in ms
  ARGV[3] how long the hash is kept at least, in ms (tick memory)
  Returns 1 when this run still held the lock, 0 when it had lapsed (lockAtMostFor) or was taken.
]]
local time = redis.call('time')
local now = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
local v = redis.call('hmget', KEYS[1], 'o', 's')
if v[1] ~= ARGV[1] then
  return 0
end
local lockedUntil = math.max(now, tonumber(v[2]) + tonumber(ARGV[2]))
redis.call('hset', KEYS[1], 'u', lockedUntil)
redis.call('hdel', KEYS[1], 'o')
redis.call('pexpire', KEYS[1], math.max(lockedUntil - now, tonumber(ARGV[3])))
return 1

--[[
  Release several permits by id and wake waiters: every one that is held ('any'), or all of them or none ('all').
  KEYS[1] free permits
  KEYS[2] leases zset
  KEYS[3] permit id -> number of permits
  ARGV[1] 'any' or 'all'
  ARGV[2] channel to publish on
  ARGV[3 .. #ARGV-1] permit ids (distinct)
  ARGV[last] the publish command (appended by the client, see includes/notify.lua)
  Returns {leases released, permits given back}; with 'all', {-(ids not held), 0} when one is not held (nothing released).
  @args [mode: 'all' | 'any', channel: string, ...ids: Array<string>]
  @reply [released: number, permits: number]
]]
--- @include "notify"
--- @include "psem-reclaim"
local now = redis_now()
psem_reclaim(KEYS[1], KEYS[2], KEYS[3], ARGV[2], now)
if ARGV[1] == 'all' then
  local missing = 0
  for i = 3, #ARGV - 1 do
    if not redis.call('zscore', KEYS[2], ARGV[i]) then
      missing = missing + 1
    end
  end
  if missing > 0 then
    return {-missing, 0}
  end
end
local released, back = 0, 0
for i = 3, #ARGV - 1 do
  if redis.call('zscore', KEYS[2], ARGV[i]) then
    back = back + tonumber(redis.call('hget', KEYS[3], ARGV[i]) or '0')
    redis.call('zrem', KEYS[2], ARGV[i])
    redis.call('hdel', KEYS[3], ARGV[i])
    released = released + 1
  end
end
if released > 0 then
  redis.call('incrby', KEYS[1], back)
  notify(ARGV[2], 'a')
end
return {released, back}

--[[
  Release a permit by id, idempotently per request, and wake waiters.
  KEYS[1] free permits
  KEYS[2] leases zset
  KEYS[3] permit id -> number of permits
  KEYS[4] this request's release marker
  ARGV[1] permit id
  ARGV[2] channel to publish on
  ARGV[3] marker TTL in ms
  Returns the number of permits given back, or 0 when the permit was not held (released or expired).
]]
--- @include "psem-reclaim"
local done = redis.call('get', KEYS[4])
if done then
  return tonumber(done)
end
local now = redis_now()
psem_reclaim(KEYS[1], KEYS[2], KEYS[3], ARGV[2], now)
local back = 0
if redis.call('zscore', KEYS[2], ARGV[1]) then
  back = tonumber(redis.call('hget', KEYS[3], ARGV[1]) or '0')
  redis.call('zrem', KEYS[2], ARGV[1])
  redis.call('hdel', KEYS[3], ARGV[1])
  redis.call('incrby', KEYS[1], back)
  redis.call('publish', ARGV[2], 'a')
end
redis.call('set', KEYS[4], back, 'px', ARGV[3])
return back

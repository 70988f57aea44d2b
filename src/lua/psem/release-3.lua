--[[
  Release a permit by id and wake waiters. A retry needs no marker: a permit is released whole, so a retry that
  finds it gone (0) is read by the client as released when it held the permit when it first sent the request.
  KEYS[1] free permits
  KEYS[2] leases zset
  KEYS[3] permit id -> number of permits
  ARGV[1] permit id
  ARGV[2] channel to publish on
  ARGV[last] the publish command (appended by the client, see includes/notify.lua)
  Returns the number of permits given back, or 0 when the permit was not held (released or expired).
  @args [id: string, channel: string]
  @reply number
]]
--- @include "notify"
--- @include "psem-reclaim"
local now = redis_now()
psem_reclaim(KEYS[1], KEYS[2], KEYS[3], ARGV[2], now)
local back = 0
if redis.call('zscore', KEYS[2], ARGV[1]) then
  back = tonumber(redis.call('hget', KEYS[3], ARGV[1]) or '0')
  redis.call('zrem', KEYS[2], ARGV[1])
  redis.call('hdel', KEYS[3], ARGV[1])
  redis.call('incrby', KEYS[1], back)
  notify(ARGV[2], 'a')
end
return back

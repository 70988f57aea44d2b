--[[
  Set a permit's lease to ARGV[2] ms from now. Never revives an expired permit.
  KEYS[1] free permits
  KEYS[2] leases zset
  KEYS[3] permit id -> number of permits
  ARGV[1] permit id
  ARGV[2] lease in ms
  ARGV[3] channel to publish reclaims on
  ARGV[last] the publish command (appended by the client, see includes/notify.lua)
  Returns 1 when extended, 0 when the permit is not held (released or expired).
  @args [id: string, leaseMs: number, channel: string]
  @reply 0 | 1
]]
--- @include "psem-reclaim"
local now = redis_now()
psem_reclaim(KEYS[1], KEYS[2], KEYS[3], ARGV[3], now)
if not redis.call('zscore', KEYS[2], ARGV[1]) then
  return 0
end
redis.call('zadd', KEYS[2], now + tonumber(ARGV[2]), ARGV[1])
return 1

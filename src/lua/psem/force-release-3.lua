--[[
  Give back every permit of a permit-expirable semaphore, whoever holds it, and wake its waiters. The holders find
  out at their next renewal (not held). The count of free permits keeps its TTL (or none, as the semaphore had).
  KEYS[1] free permits
  KEYS[2] leases zset
  KEYS[3] permit id -> number of permits
  ARGV[1] channel to publish on
  ARGV[last] the publish command (appended by the client, see includes/notify.lua)
  Returns the number of permits given back (live leases only: expired ones are reclaimed as usual), 0 when none.
  @args [channel: string]
  @reply number
]]
--- @include "psem-reclaim"
local now = redis_now()
psem_reclaim(KEYS[1], KEYS[2], KEYS[3], ARGV[1], now)
local back = 0
for _, n in ipairs(redis.call('hvals', KEYS[3])) do
  back = back + tonumber(n)
end
if redis.call('zcard', KEYS[2]) == 0 then
  return 0
end
redis.call('del', KEYS[2], KEYS[3])
redis.call('incrby', KEYS[1], back)
notify(ARGV[1], 'a')
return back

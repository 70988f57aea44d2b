--[[
  Set the total number of permits of a permit-expirable semaphore (free + held by live leases): the free count
  becomes total - held, below zero while more are held than the new total (they are not taken back).
  KEYS[1] free permits
  KEYS[2] leases zset
  KEYS[3] permit id -> number of permits
  ARGV[1] the total
  ARGV[2] channel to publish on
  ARGV[last] the publish command (appended by the client, see includes/notify.lua)
  Returns the free permits now.
  @args [permits: number, channel: string]
  @reply number
]]
--- @include "notify"
--- @include "psem-reclaim"
local now = redis_now()
psem_reclaim(KEYS[1], KEYS[2], KEYS[3], ARGV[2], now)
local held = 0
for _, n in ipairs(redis.call('hvals', KEYS[3])) do
  held = held + tonumber(n)
end
local before = tonumber(redis.call('get', KEYS[1]) or '0')
local free = tonumber(ARGV[1]) - held
-- keepttl: a semaphore with a TTL of its own keeps it
redis.call('set', KEYS[1], free, 'keepttl')
if free > before then
  notify(ARGV[2], 'a')
end
return free

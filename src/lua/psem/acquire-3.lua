--[[
  Take permits from a permit-expirable semaphore as one lease with an id.
  KEYS[1] free permits (absent = 0)
  KEYS[2] leases zset, permit id -> expiry (Redis ms; +inf for a permit without a lease)
  KEYS[3] permit id -> number of permits
  ARGV[1] permit id (random, unique)
  ARGV[2] permits wanted
  ARGV[3] lease in ms, or 'inf' for none (the permit persists until released)
  ARGV[4] channel to publish reclaims on
  ARGV[last] the publish command (appended by the client, see includes/notify.lua)
  Returns {1, free permits left} when taken; {0, ms until the nearest lease expires, or -1 if none}.
  @args [id: string, permits: number, leaseMs: number | 'inf', channel: string]
  @reply [1, free: number] | [0, retryInMs: number]
]]
--- @include "psem-reclaim"
--- @include "psem-expiry"
local now = redis_now()
psem_reclaim(KEYS[1], KEYS[2], KEYS[3], ARGV[4], now)
local want = tonumber(ARGV[2])
local free = tonumber(redis.call('get', KEYS[1]) or '0')
if free >= want then
  local left = redis.call('decrby', KEYS[1], want)
  redis.call('zadd', KEYS[2], psem_expiry(ARGV[3], now), ARGV[1])
  redis.call('hset', KEYS[3], ARGV[1], want)
  psem_share_ttl(KEYS[1], KEYS[2], KEYS[3])
  return {1, left}
end
return {0, psem_next_expiry(KEYS[2], now)}

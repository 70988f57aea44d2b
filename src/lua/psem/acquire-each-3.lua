--[[
  Take one permit per id from a permit-expirable semaphore, all or none: n permits as n leases with their own ids.
  KEYS[1] free permits (absent = 0)
  KEYS[2] leases zset, permit id -> expiry (Redis ms; +inf for a permit without a lease)
  KEYS[3] permit id -> number of permits
  ARGV[1] lease in ms, or 'inf' for none (the permits persist until released)
  ARGV[2] channel to publish reclaims on
  ARGV[3 .. #ARGV-1] the permit ids (random, unique)
  ARGV[last] the publish command (appended by the client, see includes/notify.lua)
  Returns {1, free permits left} when taken; {0, ms until the nearest lease expires, or -1 if none}.
  @args [leaseMs: number | 'inf', channel: string, ...ids: Array<string>]
  @reply [1, free: number] | [0, retryInMs: number]
]]
--- @include "psem-reclaim"
--- @include "psem-expiry"
local now = redis_now()
psem_reclaim(KEYS[1], KEYS[2], KEYS[3], ARGV[2], now)
local want = #ARGV - 3
local free = tonumber(redis.call('get', KEYS[1]) or '0')
if free >= want then
  local left = redis.call('decrby', KEYS[1], want)
  local expiry = psem_expiry(ARGV[1], now)
  for i = 3, #ARGV - 1 do
    redis.call('zadd', KEYS[2], expiry, ARGV[i])
    redis.call('hset', KEYS[3], ARGV[i], 1)
  end
  psem_share_ttl(KEYS[1], KEYS[2], KEYS[3])
  return {1, left}
end
return {0, psem_next_expiry(KEYS[2], now)}

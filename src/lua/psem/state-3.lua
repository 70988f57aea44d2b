--[[
  Reclaim expired permits, then report.
  KEYS[1] free permits
  KEYS[2] leases zset
  KEYS[3] permit id -> number of permits
  ARGV[1] channel to publish reclaims on
  ARGV[2] a permit id to report the remaining lease of, or ''
  ARGV[last] the publish command (appended by the client, see includes/notify.lua)
  Returns {free permits, permits held, leases held, ms left on ARGV[2]'s lease or -2 if not held (-3: held without
  a lease), ARGV[2]'s permits (0 if not held)}.
  @args [channel: string, id: string]
  @reply [free: number, held: number, leases: number, pttl: number, permits: number]
]]
--- @include "psem-reclaim"
local now = redis_now()
psem_reclaim(KEYS[1], KEYS[2], KEYS[3], ARGV[1], now)
local held = 0
for _, n in ipairs(redis.call('hvals', KEYS[3])) do
  held = held + tonumber(n)
end
local left, weight = -2, 0
if ARGV[2] ~= '' then
  local score = redis.call('zscore', KEYS[2], ARGV[2])
  if score then
    weight = tonumber(redis.call('hget', KEYS[3], ARGV[2]) or '0')
    if score == 'inf' or tonumber(score) == math.huge then
      left = -3
    else
      left = math.max(0, tonumber(score) - now)
    end
  end
end
return {tonumber(redis.call('get', KEYS[1]) or '0'), held, redis.call('zcard', KEYS[2]), left, weight}

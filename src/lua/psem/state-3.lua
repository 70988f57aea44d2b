--[[
  Reclaim expired permits, then report.
  KEYS[1] free permits
  KEYS[2] leases zset
  KEYS[3] permit id -> number of permits
  ARGV[1] channel to publish reclaims on
  ARGV[2] a permit id to report the remaining lease of, or ''
  Returns {free permits, permits held, leases held, ms left on ARGV[2]'s lease or -2 if not held}.
]]
--- @include "psem-reclaim"
local now = redis_now()
psem_reclaim(KEYS[1], KEYS[2], KEYS[3], ARGV[1], now)
local held = 0
for _, n in ipairs(redis.call('hvals', KEYS[3])) do
  held = held + tonumber(n)
end
local left = -2
if ARGV[2] ~= '' then
  local score = redis.call('zscore', KEYS[2], ARGV[2])
  if score then
    left = math.max(0, tonumber(score) - now)
  end
end
return {tonumber(redis.call('get', KEYS[1]) or '0'), held, redis.call('zcard', KEYS[2]), left}

--- @include "redis-now"
-- Drops readers and writer intents whose lease ran out (score = expiry <= now).
local function rw_purge(readers, counts, intents, now)
  local gone = redis.call('zrangebyscore', readers, '-inf', now)
  for _, owner in ipairs(gone) do
    redis.call('hdel', counts, owner)
  end
  if #gone > 0 then
    redis.call('zremrangebyscore', readers, '-inf', now)
  end
  redis.call('zremrangebyscore', intents, '-inf', now)
end

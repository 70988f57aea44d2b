--- @include "notify"
--- @include "redis-now"
-- The lease zset and weight hash have no TTL of their own: if they expired with their last lease, the permits it held
-- could never be given back. Like the count of free permits, they live as long as the semaphore (and share its TTL
-- when it has one, see psem-expiry.lua).
-- Gives back the permits of leases that ran out (score = expiry <= now), and wakes waiters if any came back.
local function psem_reclaim(free, leases, weights, channel, now)
  local gone = redis.call('zrangebyscore', leases, '-inf', now)
  if #gone == 0 then
    return 0
  end
  local back = 0
  for _, id in ipairs(gone) do
    back = back + tonumber(redis.call('hget', weights, id) or '0')
    redis.call('hdel', weights, id)
  end
  redis.call('zremrangebyscore', leases, '-inf', now)
  if back > 0 then
    redis.call('incrby', free, back)
    notify(channel, 'a')
  end
  return back
end

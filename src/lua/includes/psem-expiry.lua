-- A permit-expirable semaphore may have a TTL of its own (trySetPermits with `ttl`, or expire()): it lives on the
-- count of free permits, and the lease zset and weight hash share it so the three keys go together. Called after a
-- write that may have created one of them.
local function psem_share_ttl(free, leases, weights)
  local pttl = redis.call('pttl', free)
  if pttl > 0 then
    redis.call('pexpire', leases, pttl)
    redis.call('pexpire', weights, pttl)
  end
end
-- The expiry score of a lease of `lease` ms from `now`, or '+inf' for a permit without a lease ('inf').
local function psem_expiry(lease, now)
  if lease == 'inf' then
    return '+inf'
  end
  return now + tonumber(lease)
end
-- ms from `now` until the earliest lease of `leases` runs out, or -1 when there is none with an end.
local function psem_next_expiry(leases, now)
  local first = redis.call('zrange', leases, 0, 0, 'withscores')
  if not first[2] or first[2] == 'inf' or tonumber(first[2]) == math.huge then
    return -1
  end
  return math.max(1, tonumber(first[2]) - now)
end

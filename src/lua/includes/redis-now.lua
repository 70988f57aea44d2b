-- Redis' own clock in ms (never the client's wall clock).
local function redis_now()
  local t = redis.call('time')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end
-- Sets `key`'s TTL to the largest score of the zset `zkey` minus now (scores are expiries), on each key given.
local function expire_to_last(zkey, now, ...)
  local last = redis.call('zrange', zkey, -1, -1, 'withscores')
  if last[2] then
    local ttl = math.max(1, tonumber(last[2]) - now)
    redis.call('pexpire', zkey, ttl)
    for _, key in ipairs({...}) do
      redis.call('pexpire', key, ttl)
    end
  else
    redis.call('del', zkey, ...)
  end
end

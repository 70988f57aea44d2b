--[[
  Acquire (or re-enter) a reentrant lock.
  KEYS[1] the lock: a string "<hold count>:<fencing token>:<owner id>" with the lease as its TTL
  KEYS[2] the fencing counter of this name
  ARGV[1] owner id
  ARGV[2] lease in ms
  ARGV[3] '1' when this owner may already hold the lock (an explicit or inherited owner id: re-entry possible),
          '0' for an owner id minted for this acquisition, which cannot hold it yet
  Returns the token (a number) when a first hold was taken, {1, token, holdCount} when re-entered, {0, pttl} when
  another owner holds it. The bare number keeps the common reply small: an array reply costs more on both ends.

  A fresh owner takes the short path, two calls: mint a token, then SET NX. When the lock is taken the token minted
  is simply never used: tokens must only grow, they need not be dense.
]]
--- @include "lock-value"
local owner = ARGV[1]
local lease = ARGV[2]
if ARGV[3] ~= '1' then
  local token = redis.call('incr', KEYS[2])
  if redis.call('set', KEYS[1], lock_value(1, token, owner), 'nx', 'px', lease) then
    return token
  end
  -- Taken. By this very owner only if this request ran before: a client that resends the commands in flight after
  -- a reconnect (ioredis) delivers it twice. Report that first run's acquisition, unchanged.
  local count, held, current = lock_parse(redis.call('get', KEYS[1]))
  if current == owner then
    return {1, held, count}
  end
  return {0, redis.call('pttl', KEYS[1])}
end
local count, token, current = lock_parse(redis.call('get', KEYS[1]))
if not count then
  token = redis.call('incr', KEYS[2])
  redis.call('set', KEYS[1], lock_value(1, token, owner), 'px', lease)
  return token
end
if current == owner then
  count = count + 1
  local value = lock_value(count, token, owner)
  -- re-entry never shortens the lease an outer hold asked for
  if redis.call('pttl', KEYS[1]) < tonumber(lease) then
    redis.call('set', KEYS[1], value, 'px', lease)
  else
    redis.call('set', KEYS[1], value, 'keepttl')
  end
  return {1, token, count}
end
return {0, redis.call('pttl', KEYS[1])}

--[[
  Acquire (or re-enter) a reentrant lock.
  KEYS[1] the lock hash {o = owner, c = hold count, t = fencing token}
  KEYS[2] the fencing counter of this name
  ARGV[1] owner id
  ARGV[2] lease in ms
  Returns {1, token, holdCount} when acquired or re-entered, {0, pttl} when another owner holds it.
]]
local owner = ARGV[1]
local lease = tonumber(ARGV[2])
local current = redis.call('hget', KEYS[1], 'o')
if not current then
  local token = redis.call('incr', KEYS[2])
  redis.call('hset', KEYS[1], 'o', owner, 'c', 1, 't', token)
  redis.call('pexpire', KEYS[1], lease)
  return {1, token, 1}
end
if current == owner then
  local count = redis.call('hincrby', KEYS[1], 'c', 1)
  -- re-entry never shortens the lease an outer hold asked for
  if redis.call('pttl', KEYS[1]) < lease then
    redis.call('pexpire', KEYS[1], lease)
  end
  return {1, tonumber(redis.call('hget', KEYS[1], 't')), count}
end
return {0, redis.call('pttl', KEYS[1])}

--[[
  Acquire (or re-enter) the write lock of a read-write lock.
  KEYS[1] the writer hash {o = owner, c = hold count, t = fencing token}
  KEYS[2] readers zset, owner -> lease expiry (Redis ms)
  KEYS[3] readers' hold counts hash
  KEYS[4] waiting writers' intents zset, owner -> expiry
  KEYS[5] the fencing counter of this name
  ARGV[1] owner id
  ARGV[2] lease in ms
  ARGV[3] intent TTL in ms: when busy, record that this writer waits (new readers then wait); '0' = do not
  Returns {1, token, holdCount} when acquired; {0, ms to wait at most} when busy;
  {-1} when this owner holds the read lock (an upgrade is refused: it would deadlock with another upgrader).
  @args [owner: string, leaseMs: number, intentMs: number]
  @reply [1, token: number, holdCount: number] | [0, retryInMs: number] | [-1]
]]
-- The common case first, before any helper is defined: no writer, no reader, no waiting writer. Take it.
if redis.call('exists', KEYS[1], KEYS[2], KEYS[4]) == 0 then
  local token = redis.call('incr', KEYS[5])
  redis.call('hset', KEYS[1], 'o', ARGV[1], 'c', 1, 't', token)
  redis.call('pexpire', KEYS[1], ARGV[2])
  return {1, token, 1}
end
--- @include "rw-purge"
local now = redis_now()
rw_purge(KEYS[2], KEYS[3], KEYS[4], now)
local owner = ARGV[1]
local lease = tonumber(ARGV[2])
local intent = tonumber(ARGV[3])
local function wait_with_intent(ms)
  if intent > 0 then
    redis.call('zadd', KEYS[4], now + intent, owner)
    expire_to_last(KEYS[4], now)
  end
  return {0, ms}
end
local writer = redis.call('hget', KEYS[1], 'o')
if writer == owner then
  local count = redis.call('hincrby', KEYS[1], 'c', 1)
  if redis.call('pttl', KEYS[1]) < lease then
    redis.call('pexpire', KEYS[1], lease)
  end
  return {1, tonumber(redis.call('hget', KEYS[1], 't')), count}
end
if redis.call('zscore', KEYS[2], owner) then
  return {-1}
end
if writer then
  return wait_with_intent(redis.call('pttl', KEYS[1]))
end
local first = redis.call('zrange', KEYS[2], 0, 0, 'withscores')
if first[2] then
  return wait_with_intent(math.max(1, tonumber(first[2]) - now))
end
local token = redis.call('incr', KEYS[5])
redis.call('hset', KEYS[1], 'o', owner, 'c', 1, 't', token)
redis.call('pexpire', KEYS[1], lease)
if redis.call('zrem', KEYS[4], owner) == 1 then
  expire_to_last(KEYS[4], now)
end
return {1, token, 1}

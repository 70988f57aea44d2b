--[[
  Acquire (or re-enter) the read lock of a read-write lock.
  KEYS[1] the writer hash {o, c, t}
  KEYS[2] readers zset, owner -> lease expiry (Redis ms)
  KEYS[3] readers' hold counts hash, owner -> count
  KEYS[4] waiting writers' intents zset, owner -> expiry
  ARGV[1] owner id
  ARGV[2] lease in ms
  Returns {1, holdCount} when acquired; {0, ms to wait at most} when a writer holds the lock or one is waiting.
  A new reader waits while a writer's intent lives (writers are not starved); a reader that already holds the
  read lock, or the owner that holds the write lock (downgrade), is admitted anyway (else it would deadlock).
  @args [owner: string, leaseMs: number]
  @reply [1, holdCount: number] | [0, retryInMs: number]
]]
--- @include "rw-purge"
local now = redis_now()
rw_purge(KEYS[2], KEYS[3], KEYS[4], now)
local owner = ARGV[1]
local lease = tonumber(ARGV[2])
local writer = redis.call('hget', KEYS[1], 'o')
if writer and writer ~= owner then
  return {0, redis.call('pttl', KEYS[1])}
end
local held = redis.call('zscore', KEYS[2], owner)
if not held and not writer then
  local first = redis.call('zrange', KEYS[4], 0, 0, 'withscores')
  if first[2] then
    return {0, math.max(1, tonumber(first[2]) - now)}
  end
end
local count = redis.call('hincrby', KEYS[3], owner, 1)
local expiry = now + lease
-- re-entry never shortens the lease an outer hold has
if held and tonumber(held) > expiry then
  expiry = tonumber(held)
end
redis.call('zadd', KEYS[2], expiry, owner)
expire_to_last(KEYS[2], now, KEYS[3])
return {1, count}

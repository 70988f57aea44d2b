--[[
  Extend the lease of this owner's read lock to ARGV[2] ms from now. Never revives an expired read lock.
  KEYS[1] readers zset
  KEYS[2] readers' hold counts hash
  KEYS[3] waiting writers' intents zset
  ARGV[1] owner id
  ARGV[2] lease in ms
  Returns 1 when extended, 0 when this owner holds no read lock.
  @args [owner: string, leaseMs: number]
  @reply 0 | 1
]]
--- @include "rw-purge"
local now = redis_now()
rw_purge(KEYS[1], KEYS[2], KEYS[3], now)
if not redis.call('zscore', KEYS[1], ARGV[1]) then
  return 0
end
redis.call('zadd', KEYS[1], now + tonumber(ARGV[2]), ARGV[1])
expire_to_last(KEYS[1], now, KEYS[2])
return 1

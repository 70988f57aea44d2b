--[[
  Extend the lease of a lock this owner holds. Never revives an expired lock: an expired key is gone.
  KEYS[1] the lock: "<hold count>:<fencing token>:<owner id>"
  ARGV[1] owner id
  ARGV[2] new lease in ms
  Returns 1 when extended, 0 when this owner no longer holds the lock.
  @args [owner: string, leaseMs: number]
  @reply 0 | 1
]]
--- @include "lock-value"
local _, _, owner = lock_parse(redis.call('get', KEYS[1]))
if owner == ARGV[1] then
  redis.call('pexpire', KEYS[1], ARGV[2])
  return 1
end
return 0

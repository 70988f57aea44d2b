--[[
  Redlock's adopt on one node: set the lease of this owner's key here, where this owner holds it. Unlike the
  renewal, it never takes a lost key back: an adoption counts only the nodes that still hold the lock.
  KEYS[1] the lock: "<hold count>:<fencing token>:<owner id>"
  ARGV[1] owner id
  ARGV[2] lease in ms
  Returns {1, token} when this owner holds the lock here (lease set), {0} when it does not (the key is gone, or only
  reserved for it), {-1} when another owner holds it.
  @args [owner: string, leaseMs: number]
  @reply [1, token: number] | [0] | [-1]
]]
--- @include "lock-value"
local count, token, owner = lock_parse(redis.call('get', KEYS[1]))
if owner and owner ~= ARGV[1] then
  return {-1}
end
if not owner or count == 0 then
  return {0}
end
redis.call('pexpire', KEYS[1], ARGV[2])
return {1, token}

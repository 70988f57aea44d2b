--[[
  Redlock's second round: raise this node's fencing counter to the token chosen from the quorum's counters, but
  only while this owner still holds the lock here. Once a majority has done it, every later acquisition, which must
  take one of those nodes after this owner's key left it, mints a larger token there.
  KEYS[1] the lock: "<hold count>:<fencing token>:<owner id>"
  KEYS[2] the fencing counter of this name
  ARGV[1] owner id
  ARGV[2] the token chosen (max of the quorum's counters)
  Returns 1 when raised (or already at least as high), 0 when this owner does not hold the lock here.
  @args [owner: string, token: number]
  @reply 0 | 1
]]
--- @include "lock-value"
local count, _, owner = lock_parse(redis.call('get', KEYS[1]))
if owner ~= ARGV[1] then
  return 0
end
local token = tonumber(ARGV[2])
local current = tonumber(redis.call('get', KEYS[2]) or '0')
if current < token then
  redis.call('set', KEYS[2], token)
end
redis.call('set', KEYS[1], lock_value(count, token, owner), 'keepttl')
return 1

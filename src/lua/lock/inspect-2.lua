--[[
  Read a lock's state in one step.
  KEYS[1] the lock: "<hold count>:<fencing token>:<owner id>"
  KEYS[2] the fencing counter
  Returns {owner or false, holdCount, token, pttl, lastToken}.
  @args []
  @reply [owner: string | null, holdCount: number, token: number, pttl: number, lastToken: number]
]]
--- @include "lock-value"
local count, token, owner = lock_parse(redis.call('get', KEYS[1]))
local last = tonumber(redis.call('get', KEYS[2]) or '0')
if not count then
  return {false, 0, 0, -2, last}
end
return {owner, count, token, redis.call('pttl', KEYS[1]), last}

--[[
  Read a lock's state in one step.
  KEYS[1] the lock hash
  KEYS[2] the fencing counter
  Returns {owner or false, holdCount, token, pttl, lastToken}.
]]
local v = redis.call('hmget', KEYS[1], 'o', 'c', 't')
local last = tonumber(redis.call('get', KEYS[2]) or '0')
if not v[1] then
  return {false, 0, 0, -2, last}
end
return {v[1], tonumber(v[2]), tonumber(v[3]), redis.call('pttl', KEYS[1]), last}

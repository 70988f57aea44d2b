--[[
  Read a latch.
  KEYS[1] the latch count
  Returns {count (0 when absent), pttl (-1 no TTL, -2 absent)}.
  @args []
  @reply [count: number, pttl: number]
]]
local count = tonumber(redis.call('get', KEYS[1]) or '0')
return {count, redis.call('pttl', KEYS[1])}

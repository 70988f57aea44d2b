--[[
  Take every free permit at once.
  KEYS[1] the semaphore
  Returns the number of permits taken (0 when none were free).
  @args []
  @reply number
]]
local free = tonumber(redis.call('get', KEYS[1]) or '0')
if free > 0 then
  redis.call('decrby', KEYS[1], free)
  return free
end
return 0

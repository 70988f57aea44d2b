--[[
  Carry a per-name fencing counter of version 0.1 over to its slot's shared counter, once: raise the shared counter
  to at least the old one (tokens only grow), then delete the old key.
  KEYS[1] the old counter "<prefix>{<name>}:fence"
  KEYS[2] the shared counter of the name's slot
  Returns the old counter's value (0 when it was gone already).
  @args []
  @reply number
]]
local old = tonumber(redis.call('get', KEYS[1]) or '0')
if old > tonumber(redis.call('get', KEYS[2]) or '0') then
  redis.call('set', KEYS[2], old)
end
redis.call('del', KEYS[1])
return old

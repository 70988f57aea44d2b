--[[
  One node's view of a Redlock semaphore: how many of its permit slots are held here.
  KEYS[1..] every permit slot of the semaphore
  Returns the number of slots held.
  @args []
  @reply number
]]
local held = 0
for i = 1, #KEYS do
  if redis.call('exists', KEYS[i]) == 1 then
    held = held + 1
  end
end
return held

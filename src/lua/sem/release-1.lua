--[[
  Give permits back to a counting semaphore (or add new ones) and wake waiters.
  KEYS[1] the semaphore
  ARGV[1] permits to add (may be negative to remove permits)
  ARGV[2] channel to publish on
  Returns the free permits after the change.
]]
local n = tonumber(ARGV[1])
local free = redis.call('incrby', KEYS[1], n)
-- Wake every local waiter of each process: waiters may want different numbers of permits, and waking fewer
-- could leave a waiter that fits asleep while one that does not fit consumed the wake.
if n > 0 then
  redis.call('publish', ARGV[2], 'a')
end
return free

--[[
  Give permits back to a counting semaphore (or add new ones) and wake waiters.
  KEYS[1] the semaphore
  ARGV[1] permits to add (may be negative to remove permits)
  ARGV[2] channel to publish on
  ARGV[3] '1': only if the semaphore exists (a deleted or expired semaphore is not created again); else '0'
  ARGV[last] the publish command (appended by the client, see includes/notify.lua)
  Returns the free permits after the change, or -1 when ARGV[3] is '1' and the semaphore does not exist.
  A semaphore created here has no TTL (its total is meant to persist); one set with a TTL keeps it (INCRBY keeps it).
  @args [permits: number, channel: string, onlyIfExists: '0' | '1']
  @reply number
]]
--- @include "notify"
if ARGV[3] == '1' and redis.call('exists', KEYS[1]) == 0 then
  return -1
end
local n = tonumber(ARGV[1])
local free = redis.call('incrby', KEYS[1], n)
-- Wake every local waiter of each process: waiters may want different numbers of permits, and waking fewer
-- could leave a waiter that fits asleep while one that does not fit consumed the wake.
if n > 0 then
  notify(ARGV[2], 'a')
end
return free

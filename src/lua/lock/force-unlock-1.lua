--[[
  Delete a lock whoever holds it, and wake its waiters.
  KEYS[1] the lock
  ARGV[1] channel to publish on
  ARGV[last] the publish command (appended by the client, see includes/notify.lua)
  Returns 1 when a lock was deleted, 0 when there was none.
  @args [channel: string]
  @reply 0 | 1
]]
--- @include "notify"
if redis.call('del', KEYS[1]) == 1 then
  notify(ARGV[1], 'a')
  return 1
end
return 0

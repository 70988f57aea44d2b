--[[
  Delete a latch (open it) and wake every waiter.
  KEYS[1] the latch count
  ARGV[1] channel to publish on
  ARGV[last] the publish command (appended by the client, see includes/notify.lua)
  Returns 1 when the latch existed, else 0.
  @args [channel: string]
  @reply 0 | 1
]]
--- @include "notify"
if redis.call('del', KEYS[1]) == 1 then
  notify(ARGV[1], 'a')
  return 1
end
return 0

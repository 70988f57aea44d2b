--[[
  Count a latch down by one; at zero delete it and wake every waiter.
  KEYS[1] the latch count
  ARGV[1] channel to publish on
  ARGV[last] the publish command (appended by the client, see includes/notify.lua)
  Returns the count left (0 when the latch is open, also when it did not exist).
  @args [channel: string]
  @reply number
]]
--- @include "notify"
if redis.call('exists', KEYS[1]) == 0 then
  return 0
end
local left = redis.call('decr', KEYS[1])
if left <= 0 then
  redis.call('del', KEYS[1])
  notify(ARGV[1], 'a')
  return 0
end
return left

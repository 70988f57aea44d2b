--[[
  A waiting writer gives up: remove its intent and wake the readers it held back.
  KEYS[1] waiting writers' intents zset
  ARGV[1] owner id
  ARGV[2] channel to publish on
  ARGV[last] the publish command (appended by the client, see includes/notify.lua)
  Returns 1 when an intent was removed, else 0.
  @args [owner: string, channel: string]
  @reply 0 | 1
]]
--- @include "notify"
if redis.call('zrem', KEYS[1], ARGV[1]) == 1 then
  notify(ARGV[2], 'a')
  return 1
end
return 0

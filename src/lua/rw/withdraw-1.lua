--[[
  A waiting writer gives up: remove its intent and wake the readers it held back.
  KEYS[1] waiting writers' intents zset
  ARGV[1] owner id
  ARGV[2] channel to publish on
  Returns 1 when an intent was removed, else 0.
]]
if redis.call('zrem', KEYS[1], ARGV[1]) == 1 then
  redis.call('publish', ARGV[2], 'a')
  return 1
end
return 0

--[[
  getOrLoad: store a loaded value, end the load and wake every waiter.
  KEYS[1] the cached value
  KEYS[2] the load lock hash
  ARGV[1] owner id of the load
  ARGV[2] 'v' .. encoded value
  ARGV[3] ttl in ms
  ARGV[4] channel to publish on
  ARGV[last] the publish command (appended by the client, see includes/notify.lua)
  Returns 1 when the load lock was still ours, 0 when it had lapsed (the value is stored either way: it is fresh).
  @args [owner: string, value: string, ttlMs: number, channel: string]
  @reply 0 | 1
]]
--- @include "notify"
redis.call('set', KEYS[1], ARGV[2], 'px', ARGV[3])
local ours = 0
if redis.call('hget', KEYS[2], 'o') == ARGV[1] then
  redis.call('del', KEYS[2])
  ours = 1
end
notify(ARGV[4], 'a')
return ours

--[[
  getOrLoad: a load failed. End it, leave the error for the callers that waited for this load, and wake them.
  KEYS[1] the cached value
  KEYS[2] the load lock hash
  KEYS[3] the last failed load hash
  ARGV[1] owner id of the load
  ARGV[2] error JSON
  ARGV[3] how long waiters can still read the failure, in ms
  ARGV[4] channel to publish on
  ARGV[5] errorTtl in ms: cache the error as the value for that long; 0 = do not cache it
  ARGV[last] the publish command (appended by the client, see includes/notify.lua)
  Returns 1.
  @args [owner: string, errorJson: string, failureTtlMs: number, channel: string, errorTtlMs: number]
  @reply 1
]]
--- @include "notify"
if redis.call('hget', KEYS[2], 'o') == ARGV[1] then
  redis.call('del', KEYS[2])
end
redis.call('hset', KEYS[3], 'i', ARGV[1], 'e', ARGV[2])
redis.call('pexpire', KEYS[3], ARGV[3])
if tonumber(ARGV[5]) > 0 then
  redis.call('set', KEYS[1], 'e' .. ARGV[2], 'px', ARGV[5], 'nx')
end
notify(ARGV[4], 'a')
return 1

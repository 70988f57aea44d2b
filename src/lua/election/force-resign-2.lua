--[[
  Delete the leader whoever it is, and wake the candidates (for operators: prefer resign, or letting the lease run out).
  The deposed leader learns it at its next renewal. Stale candidate entries go too.
  KEYS[1] the leader hash
  KEYS[2] the candidates
  ARGV[1] the election's channel
  ARGV[last] the publish command (appended by the client, see includes/notify.lua)
  Returns 1 when a leader was deleted, 0 when there was none.
  @args [channel: string]
  @reply 0 | 1
]]
--- @include "notify"
--- @include "redis-now"
redis.call('zremrangebyscore', KEYS[2], '-inf', redis_now())
if redis.call('del', KEYS[1]) == 1 then
  notify(ARGV[1], 'a')
  return 1
end
return 0

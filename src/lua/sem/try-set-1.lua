--[[
  Set the number of permits of a semaphore that does not exist yet.
  KEYS[1] the semaphore
  ARGV[1] permits
  ARGV[2] channel to publish on
  ARGV[3] a TTL in ms for the semaphore, or '0' for none (it persists)
  ARGV[last] the publish command (appended by the client, see includes/notify.lua)
  Returns 1 when set, 0 when the semaphore already existed (unchanged).
  @args [permits: number, channel: string, ttlMs: number]
  @reply 0 | 1
]]
--- @include "notify"
local ok
if ARGV[3] ~= '0' then
  ok = redis.call('set', KEYS[1], ARGV[1], 'nx', 'px', ARGV[3])
else
  ok = redis.call('set', KEYS[1], ARGV[1], 'nx')
end
if ok then
  notify(ARGV[2], 'a')
  return 1
end
return 0

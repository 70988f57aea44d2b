--[[
  Delete a fair lock whoever holds it, and hand it to the head of the queue.
  KEYS[1] the lock hash
  KEYS[2] the fencing counter
  KEYS[3] the queue
  KEYS[4] waiters: owner id → channel
  KEYS[5] clients: channel → alive-until
  KEYS[6] the events marker (see release)
  ARGV[1] least TTL of a grant in ms
  ARGV[2] the events channel: 'a' is published there when a lock was deleted, only while the events marker exists
  ARGV[last] the publish command (appended by the client, see includes/notify.lua)
  Returns 1 when a lock was deleted, 0 when there was none.
  @args [grantFloorMs: number, eventsChannel: string]
  @reply 0 | 1
]]
--- @include "fair-advance"
local deleted = redis.call('del', KEYS[1])
advance(KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5], redis_now(), tonumber(ARGV[1]))
if deleted == 1 and redis.call('exists', KEYS[6]) == 1 then
  notify(ARGV[2], 'a')
end
return deleted

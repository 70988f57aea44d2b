--[[
  Delete a fair lock whoever holds it, and hand it to the head of the queue.
  KEYS[1] the lock hash
  KEYS[2] the fencing counter
  KEYS[3] the queue
  KEYS[4] waiters: owner id → channel
  KEYS[5] clients: channel → alive-until
  ARGV[1] least TTL of a grant in ms
  ARGV[last] the publish command (appended by the client, see includes/notify.lua)
  Returns 1 when a lock was deleted, 0 when there was none.
]]
--- @include "fair-advance"
local deleted = redis.call('del', KEYS[1])
advance(KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5], redis_now(), tonumber(ARGV[1]))
return deleted

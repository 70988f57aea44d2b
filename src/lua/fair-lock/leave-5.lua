--[[
  A waiter gives up (timeout, abort): it leaves the queue, and a grant it had not claimed yet goes on to the next waiter.
  KEYS[1] the lock hash
  KEYS[2] the fencing counter
  KEYS[3] the queue
  KEYS[4] waiters: owner id → channel
  KEYS[5] clients: channel → alive-until
  ARGV[1] owner id
  ARGV[2] least TTL of a grant in ms
  ARGV[last] the publish command (appended by the client, see includes/notify.lua)
  Returns 1 when an unclaimed grant was passed on, else 0.
  @args [owner: string, grantFloorMs: number]
  @reply 0 | 1
]]
--- @include "fair-advance"
local owner = ARGV[1]
-- LREM is O(queue length), but only a waiter that gives up pays it, never a hand-off
redis.call('lrem', KEYS[3], 0, owner)
redis.call('hdel', KEYS[4], owner)
local v = redis.call('hmget', KEYS[1], 'o', 'c')
if v[1] == owner and v[2] == '0' then
  redis.call('del', KEYS[1])
  advance(KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5], redis_now(), tonumber(ARGV[2]))
  return 1
end
return 0

--[[
  Release one hold (or every hold) of a fair lock, idempotently per request; a lock that frees goes straight to the
  head of the queue (see fair-advance).
  KEYS[1] the lock hash
  KEYS[2] this request's release marker
  KEYS[3] the fencing counter
  KEYS[4] the queue
  KEYS[5] waiters: owner id → channel
  KEYS[6] clients: channel → alive-until
  ARGV[1] owner id
  ARGV[2] marker TTL in ms
  ARGV[3] '1' to release every hold of this owner at once, '0' for one
  ARGV[4] least TTL of a grant in ms
  Returns the holds left (0 = released, and handed on if anyone waits), or -1 when this owner does not hold the lock.
  A retried request returns what its first run returned.
]]
--- @include "fair-advance"
local done = redis.call('get', KEYS[2])
if done then
  return tonumber(done)
end
local v = redis.call('hmget', KEYS[1], 'o', 'c')
if v[1] ~= ARGV[1] or tonumber(v[2]) < 1 then
  return -1
end
local left = 0
if ARGV[3] ~= '1' then
  left = redis.call('hincrby', KEYS[1], 'c', -1)
end
if left <= 0 then
  left = 0
  redis.call('del', KEYS[1])
  advance(KEYS[1], KEYS[3], KEYS[4], KEYS[5], KEYS[6], nowMs(), tonumber(ARGV[4]))
end
redis.call('set', KEYS[2], left, 'px', ARGV[2])
return left

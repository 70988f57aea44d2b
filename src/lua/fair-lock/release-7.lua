--[[
  Release one hold (or every hold) of a fair lock, safely retryable; a lock that frees goes straight to the head of
  the queue (see fair-advance).
  KEYS[1] the lock hash
  KEYS[2] this request's release marker (written only when holds remain, read only on a retry)
  KEYS[3] the fencing counter
  KEYS[4] the queue
  KEYS[5] waiters: owner id → channel
  KEYS[6] clients: channel → alive-until
  KEYS[7] the events marker: present while someone waits for the lock to be free or listens for its releases
  ARGV[1] owner id
  ARGV[2] marker TTL in ms
  ARGV[3] '1' to release every hold of this owner at once, '0' for one
  ARGV[4] least TTL of a grant in ms
  ARGV[5] '1' when this is a retry of a request whose reply was lost
  ARGV[6] the events channel: a release publishes '1' there, only while the events marker exists
  ARGV[last] the publish command (appended by the client, see includes/notify.lua)
  Returns the holds left (0 = released, and handed on if anyone waits), or -1 when this owner does not hold the lock
  (a hold count of 0 is a grant not yet claimed: not held). A retry of a partial release returns what the first run
  returned; a retry of a full release finds the lock gone or handed on (-1), which the client reads as "released"
  when it held the lock when it first sent it.
]]
-- An earlier run of this very request (see includes/release-retry.lua, written out here: the common case below runs
-- before any helper is defined)
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
  left = tonumber(v[2]) - 1
end
if left <= 0 and redis.call('exists', KEYS[4], KEYS[7]) == 0 then
  -- the common case: freed, nobody queues to hand it to, and nobody observes its releases
  redis.call('del', KEYS[1])
  return 0
end
--- @include "fair-advance"
if left <= 0 then
  redis.call('del', KEYS[1])
  advance(KEYS[1], KEYS[3], KEYS[4], KEYS[5], KEYS[6], redis_now(), tonumber(ARGV[4]))
  if redis.call('exists', KEYS[7]) == 1 then
    notify(ARGV[6], '1')
  end
  return 0
end
redis.call('hset', KEYS[1], 'c', left)
redis.call('set', KEYS[2], left, 'px', ARGV[2])
return left

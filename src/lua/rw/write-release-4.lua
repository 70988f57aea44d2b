--[[
  Release one hold (or every hold) of a write lock, safely retryable.
  KEYS[1] the writer hash
  KEYS[2] this request's release marker (written only when holds remain, read only on a retry)
  KEYS[3] the events marker: present while someone waits for the lock to be free or listens for its releases
  KEYS[4] readers zset (read only while the events marker exists)
  ARGV[1] owner id
  ARGV[2] channel to publish on
  ARGV[3] marker TTL in ms
  ARGV[4] '1' to release every hold of this owner at once, '0' for one
  ARGV[5] '1' when this is a retry of a request whose reply was lost (informational: the marker is read on every run)
  ARGV[6] the events channel: while the events marker exists, a full release publishes 'w1' there when it left the
  lock free, or 'w0' when readers hold it (the owner's own, after a downgrade)
  ARGV[last] the publish command (appended by the client, see includes/notify.lua)
  Returns the holds left (0 = released, every waiter woken: readers and writers), or -1 when not held.
  A retry of a partial release returns what the first run returned; a retry of a full release finds nothing
  (-1), which the client reads as "released" when it held the lock when it first sent it.
]]
--- @include "notify"
--- @include "release-retry"
--- @include "redis-now"
local done = release_retried(KEYS[2])
if done then
  return done
end
if redis.call('hget', KEYS[1], 'o') ~= ARGV[1] then
  return -1
end
local left = 0
if ARGV[4] ~= '1' then
  left = redis.call('hincrby', KEYS[1], 'c', -1)
end
if left <= 0 then
  left = 0
  redis.call('del', KEYS[1])
  notify(ARGV[2], 'a')
  if redis.call('exists', KEYS[3]) == 1 then
    notify(ARGV[6], redis.call('zcount', KEYS[4], '(' .. redis_now(), '+inf') == 0 and 'w1' or 'w0')
  end
end
if left > 0 then
  redis.call('set', KEYS[2], left, 'px', ARGV[3])
end
return left

--[[
  Release one hold (or every hold) of a read lock, safely retryable.
  KEYS[1] readers zset
  KEYS[2] readers' hold counts hash
  KEYS[3] waiting writers' intents zset
  KEYS[4] this request's release marker (written only when holds remain, read only on a retry)
  KEYS[5] the writer hash (to tell whether the lock is now free)
  KEYS[6] the events marker: present while someone waits for the lock to be free or listens for its releases
  ARGV[1] owner id
  ARGV[2] channel to publish on
  ARGV[3] marker TTL in ms
  ARGV[4] '1' to release every read hold of this owner, '0' for one
  ARGV[5] '1' when this is a retry of a request whose reply was lost (informational: the marker is read on every run)
  ARGV[6] the events channel: while the events marker exists, an owner's last read release publishes 'r1' there
  when it left the lock free (no reader, no writer), else 'r0'
  ARGV[last] the publish command (appended by the client, see includes/notify.lua)
  Returns the read holds left (0 = this owner's read lock is released), or -1 when this owner holds no read lock.
]]
--- @include "notify"
--- @include "release-retry"
--- @include "rw-purge"
local done = release_retried(KEYS[4])
if done then
  return done
end
local now = redis_now()
rw_purge(KEYS[1], KEYS[2], KEYS[3], now)
local owner = ARGV[1]
if not redis.call('zscore', KEYS[1], owner) then
  return -1
end
local left = 0
if ARGV[4] ~= '1' then
  left = redis.call('hincrby', KEYS[2], owner, -1)
end
if left <= 0 then
  left = 0
  redis.call('hdel', KEYS[2], owner)
  redis.call('zrem', KEYS[1], owner)
  expire_to_last(KEYS[1], now, KEYS[2])
  -- the last reader left: a waiting writer may go now
  local free = redis.call('zcard', KEYS[1]) == 0 and redis.call('exists', KEYS[5]) == 0
  if free then
    notify(ARGV[2], 'a')
  end
  if redis.call('exists', KEYS[6]) == 1 then
    notify(ARGV[6], free and 'r1' or 'r0')
  end
end
if left > 0 then
  redis.call('set', KEYS[4], left, 'px', ARGV[3])
end
return left

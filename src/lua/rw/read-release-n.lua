--[[
  Release one hold (or every hold) of a read lock, safely retryable.
  KEYS[1] readers zset
  KEYS[2] readers' hold counts hash
  KEYS[3] waiting writers' intents zset
  KEYS[4] the writer hash (to tell whether the lock is now free; its name gives the channels, see rw-channels)
  KEYS[5] the events marker: present while someone waits for the lock to be free or listens for its releases
  KEYS[6] optional: this request's release marker (written only when holds remain, read on every run). A release the
          client expects to give up the owner's last read hold (its last hold here) is sent without one; if holds
          would remain after all (the owner id also holds it elsewhere), nothing is changed and -2 asks for the marker
  ARGV[1] owner id
  ARGV[2] the mode, a digit: all + 2 × retry, where all is 1 to release every read hold of this owner at once (0:
          one), and retry is 1 when this is a retry of a request whose reply was lost (informational: a marker is
          checked on every run, since a client that resends after a reconnect can deliver the same request twice)
  ARGV[3] with a marker: the marker TTL in ms
  ARGV[last] the publish command (appended by the client, see includes/notify.lua)
  While the events marker exists, an owner's last read release publishes 'r1' on the events channel when it left the
  lock free (no reader, no writer), else 'r0'.
  Returns the read holds left (0 = this owner's read lock is released), -1 when this owner holds no read lock, -2 when
  a marker is needed.
  @args [owner: string, mode: ReleaseMode] | [owner: string, mode: ReleaseMode, markerTtlMs: number]
  @reply number
]]
--- @include "notify"
--- @include "rw-purge"
--- @include "rw-channels"
--- @include "release-retry"
local marker = KEYS[6]
-- an earlier run of this very request (a lost reply retried, or a copy the client resent after a reconnect)
local done = release_retried(marker)
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
if tonumber(ARGV[2]) % 2 == 0 then
  left = (tonumber(redis.call('hget', KEYS[2], owner)) or 1) - 1
end
if left <= 0 then
  redis.call('hdel', KEYS[2], owner)
  redis.call('zrem', KEYS[1], owner)
  expire_to_last(KEYS[1], now, KEYS[2])
  -- the last reader left: a waiting writer may go now
  local free = redis.call('zcard', KEYS[1]) == 0 and redis.call('exists', KEYS[4]) == 0
  if free then
    notify(rw_channel(KEYS[4], 'ch'), 'a')
  end
  if redis.call('exists', KEYS[5]) == 1 then
    notify(rw_channel(KEYS[4], 'ev'), free and 'r1' or 'r0')
  end
  return 0
end
if not marker then
  return -2
end
redis.call('hset', KEYS[2], owner, left)
return release_kept(marker, left, ARGV[3])

--[[
  Release one hold (or every hold) of a write lock, safely retryable.
  KEYS[1] the writer hash (its name gives the channels, see rw-channels)
  KEYS[2] the events marker: present while someone waits for the lock to be free or listens for its releases
  KEYS[3] readers zset (read only while the events marker exists)
  KEYS[4] optional: this request's release marker (written only when holds remain, read on every run). A release the
          client expects to free the lock (its last hold here) is sent without one; if holds would remain after all
          (the owner id also holds it elsewhere), nothing is changed and -2 asks for the marker
  ARGV[1] owner id
  ARGV[2] the mode, a digit: all + 2 × retry, where all is 1 to release every hold of this owner at once (0: one), and
          retry is 1 when this is a retry of a request whose reply was lost (informational: a marker is checked on
          every run, since a client that resends after a reconnect can deliver the same request twice)
  ARGV[3] with a marker: the marker TTL in ms
  ARGV[last] the publish command (appended by the client, see includes/notify.lua)
  While the events marker exists, a full release publishes 'w1' on the events channel when it left the lock free, or
  'w0' when readers hold it (the owner's own, after a downgrade).
  Returns the holds left (0 = released, every waiter woken: readers and writers), -1 when not held, -2 when a marker
  is needed. A retry of a partial release returns what the first run returned; a retry of a full release finds
  nothing (-1), which the client reads as "released" only when the reply came before the hold's deadline (see src/internal/hold.ts).
  @args [owner: string, mode: ReleaseMode] | [owner: string, mode: ReleaseMode, markerTtlMs: number]
  @reply number
]]
--- @include "notify"
--- @include "redis-now"
--- @include "rw-channels"
--- @include "release-retry"
local marker = KEYS[4]
-- an earlier run of this very request (a lost reply retried, or a copy the client resent after a reconnect)
local done = release_retried(marker)
if done then
  return done
end
local writer = redis.call('hmget', KEYS[1], 'o', 'c')
if writer[1] ~= ARGV[1] then
  return -1
end
local left = 0
if tonumber(ARGV[2]) % 2 == 0 then
  left = tonumber(writer[2]) - 1
end
if left <= 0 then
  redis.call('del', KEYS[1])
  notify(rw_channel(KEYS[1], 'ch'), 'a')
  if redis.call('exists', KEYS[2]) == 1 then
    notify(rw_channel(KEYS[1], 'ev'), redis.call('zcount', KEYS[3], '(' .. redis_now(), '+inf') == 0 and 'w1' or 'w0')
  end
  return 0
end
if not marker then
  return -2
end
redis.call('hset', KEYS[1], 'c', left)
return release_kept(marker, left, ARGV[3])

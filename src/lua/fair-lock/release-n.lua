--[[
  Release one hold (or every hold) of a fair lock, safely retryable; a lock that frees goes straight to the head of
  the queue (see fair-advance).
  KEYS[1] the lock hash
  KEYS[2] the fencing counter
  KEYS[3] the queue
  KEYS[4] waiters: owner id → channel
  KEYS[5] clients: channel → alive-until
  KEYS[6] the events marker: present while someone waits for the lock to be free or listens for its releases
  KEYS[7] optional: this request's release marker (written only when holds remain, read on every run). A release the
          client expects to free the lock (its last hold here) is sent without one; if holds would remain after all
          (the owner id also holds it elsewhere), nothing is changed and -2 asks for the marker
  ARGV[1] owner id
  ARGV[2] the mode, a digit: all + 2 × retry, where all is 1 to release every hold of this owner at once (0: one), and
          retry is 1 when this is a retry of a request whose reply was lost (informational: a marker is checked on
          every run, since a client that resends after a reconnect can deliver the same request twice)
  ARGV[3] least TTL of a grant in ms
  ARGV[4] with a marker: the marker TTL in ms
  ARGV[last] the publish command (appended by the client, see includes/notify.lua)
  While the events marker exists, a release publishes '1' on the events channel, KEYS[1] .. ':ev' (the key layout of
  src/keys.ts: built here rather than sent with every release).
  Returns the holds left (0 = released, and handed on if anyone waits), -1 when this owner does not hold the lock (a
  hold count of 0 is a grant not yet claimed: not held), -2 when a marker is needed. A retry of a partial release
  returns what the first run returned; a retry of a full release finds the lock gone or handed on (-1), which the
  client reads as "released" only when the reply came before the hold's deadline (see src/internal/hold.ts).
  @args [owner: string, mode: ReleaseMode, grantFloorMs: number] | [owner: string, mode: ReleaseMode, grantFloorMs: number, markerTtlMs: number]
  @reply number
]]
--- @include "release-retry"
local marker = KEYS[7]
-- an earlier run of this very request (a lost reply retried, or a copy the client resent after a reconnect)
local done = release_retried(marker)
if done then
  return done
end
local v = redis.call('hmget', KEYS[1], 'o', 'c')
if v[1] ~= ARGV[1] or tonumber(v[2]) < 1 then
  return -1
end
local left = 0
if tonumber(ARGV[2]) % 2 == 0 then
  left = tonumber(v[2]) - 1
end
if left <= 0 and redis.call('exists', KEYS[3], KEYS[6]) == 0 then
  -- the common case: freed, nobody queues to hand it to, and nobody observes its releases
  redis.call('del', KEYS[1])
  return 0
end
--- @include "fair-advance"
if left <= 0 then
  redis.call('del', KEYS[1])
  advance(KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5], redis_now(), tonumber(ARGV[3]))
  if redis.call('exists', KEYS[6]) == 1 then
    notify(KEYS[1] .. ':ev', '1')
  end
  return 0
end
if not marker then
  return -2
end
redis.call('hset', KEYS[1], 'c', left)
return release_kept(marker, left, ARGV[4])

--[[
  Release one hold (or every hold) of a reentrant lock, safely retryable. When the lock frees and other clients'
  waiters wait, it is reserved for a moment for the one that has waited longest, and that one is woken: a releaser
  that asks again at once cannot barge ahead of it.
  KEYS[1] the lock: "<hold count>:<fencing token>:<owner id>"
  KEYS[2] the waiters: owner id → when it first found the lock taken
  KEYS[3] optional: this request's release marker (written only when holds remain, read only on a retry). A release
          the client expects to free the lock (its last hold here) is sent without one; if holds would remain after
          all (the owner id also holds it elsewhere), nothing is changed and -2 asks for the marker
  ARGV[1] owner id
  ARGV[2] the mode, a digit: all + 2 × retry, where all is 1 to release every hold of this owner at once (0: one),
          and retry is 1 when this is a retry of a request whose reply was lost (informational: a marker is checked
          on every run, since a client that resends after a reconnect can deliver the same request twice)
  ARGV[3] with a marker: the marker TTL in ms
  ARGV[last] the publish command (appended by the client, see includes/notify.lua)
  A reservation lasts 50 ms: past it, any waiter may take the lock.
  Returns the holds left (0 = released, and one waiter per process told: the longest-waiting one where it waits),
  -1 when this owner does not hold the lock, -2 when a marker is needed. A retry of a partial release returns what
  the first run returned. A retry of a full release has no marker: it finds the lock gone or another owner's (-1),
  which proves nothing by itself (the first run freed it, or the first try never got here and the lease lapsed).
  The client reads it as "released" only when the reply came before the hold's deadline (then only the first run can
  have freed it), else as "not held" (see the release rule in src/internal/hold.ts).
  @args [owner: string, mode: ReleaseMode] | [owner: string, mode: ReleaseMode, markerTtlMs: number]
  @reply number
]]
--- @include "notify"
--- @include "lock-value"
--- @include "release-retry"
-- The lock's channel, "<base>:ch", from its key "<base>:lock" (the key layout of src/keys.ts): not sent, to keep the
-- request short
local function channel_of(key)
  return string.sub(key, 1, -5) .. 'ch'
end
local mode = tonumber(ARGV[2])
local marker = KEYS[3]
-- an earlier run of this very request (a lost reply retried, or a copy the client resent after a reconnect)
local done = release_retried(marker)
if done then
  return done
end
local count, token, owner = lock_parse(redis.call('get', KEYS[1]))
if owner ~= ARGV[1] or count == 0 then
  return -1
end
local left = 0
if mode % 2 == 0 then
  left = count - 1
end
if left <= 0 then
  -- EXISTS first: the waiter list is there only while the lock is contended, and on a missing key EXISTS costs a
  -- third of what ZRANGE does
  local next = redis.call('exists', KEYS[2]) == 1 and redis.call('zrange', KEYS[2], 0, 0)[1]
  if next then
    redis.call('zrem', KEYS[2], next)
    redis.call('set', KEYS[1], lock_value(0, 0, next), 'px', 50)
    notify(channel_of(KEYS[1]), '1:' .. next)
  else
    redis.call('del', KEYS[1])
    notify(channel_of(KEYS[1]), '1')
  end
  return 0
end
if not marker then
  return -2
end
redis.call('set', KEYS[1], lock_value(left, token, owner), 'keepttl')
return release_kept(marker, left, ARGV[3])

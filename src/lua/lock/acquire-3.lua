--[[
  Acquire (or re-enter) a reentrant lock.
  KEYS[1] the lock: a string "<hold count>:<fencing token>:<owner id>" with the lease as its TTL; hold count 0 is a
          reservation: a release handed the free lock to the longest-waiting waiter for a moment
  KEYS[2] the fencing counter of this name (shared by its slot, see src/keys.ts)
  KEYS[3] the waiters of other clients: owner id → when it first found the lock taken (Redis ms)
  ARGV[1] owner id
  ARGV[2] lease in ms
  ARGV[3] the mode, a digit: wait + 3 × mayHold, where
          wait is 0 for a single attempt, 1 for the first attempt of a caller that will wait if it finds the lock
          taken (it joins the waiters then), 2 for a waiter's later attempt (it leaves the waiters when it gets the
          lock); mayHold is 1 when this owner may already hold the lock (an explicit or inherited owner id: re-entry
          possible), 0 for an owner id minted for this acquisition, which cannot hold it yet
  ARGV[4] optional, a waiter's later attempts: when it first found the lock taken (Redis ms, as this script answered).
          A waiter whose entry is gone (a release reserved the lock for it, and it came too late to take it) joins
          again at that time, not at the back
  A waiter list entry lives max(10 s, 2 × lease) without being refreshed.
  Returns the token (a number) when a first hold was taken, {1, token, holdCount} when re-entered, {0, pttl, since}
  when another owner holds it (or it is reserved for another waiter; since: when this waiter first found it taken,
  for a waiter, to send back with its later attempts). The bare number keeps the common reply small: an array reply
  costs more on both ends.

  This runs once per acquisition, so it is built for the common case: few, short arguments, and a fresh owner taking
  a free lock runs first, two calls (mint a token, then SET NX), before any helper below is even defined. When the
  lock is taken the token minted is simply never used: tokens must only grow, they need not be dense. The waiter list
  is touched only when the lock is taken, or by a waiter: an uncontended acquisition never sees it.
  @args [owner: string, leaseMs: number, mode: AcquireMode] | [owner: string, leaseMs: number, mode: AcquireMode, since: string]
  @reply number | [1, token: number, holdCount: number] | [0, pttl: number, since?: string]
]]
local owner = ARGV[1]
local lease = ARGV[2]
local mode = tonumber(ARGV[3])
local token
if mode < 3 then
  token = redis.call('incr', KEYS[2])
  -- the value is lock_value(1, token, owner), written out: the helpers are not defined yet
  if redis.call('set', KEYS[1], '1:' .. token .. ':' .. owner, 'nx', 'px', lease) then
    if mode == 2 then
      redis.call('zrem', KEYS[3], owner)
    end
    return token
  end
end
--- @include "lock-value"
--- @include "redis-now"
local wait = mode % 3

local function busy()
  if wait ~= 0 then
    -- NX keeps the time it first waited: the release reserves the lock for the longest-waiting waiter
    redis.call('zadd', KEYS[3], 'nx', ARGV[4] or redis_now(), owner)
    redis.call('pexpire', KEYS[3], math.max(10000, 2 * tonumber(lease)))
    return {0, redis.call('pttl', KEYS[1]), redis.call('zscore', KEYS[3], owner)}
  end
  return {0, redis.call('pttl', KEYS[1])}
end

local function take(t)
  redis.call('set', KEYS[1], lock_value(1, t, owner), 'px', lease)
  if wait == 2 then
    redis.call('zrem', KEYS[3], owner)
  end
  return t
end

if mode < 3 then
  -- a fresh owner that found the lock taken (its token is in hand)
  local count, held, current = lock_parse(redis.call('get', KEYS[1]))
  if current == owner then
    if count == 0 then
      -- reserved for this waiter by the release that woke it
      return take(token)
    end
    -- Held by this very owner only if this request ran before: a client that resends the commands in flight after
    -- a reconnect (ioredis) delivers it twice. Report that first run's acquisition, unchanged.
    return {1, held, count}
  end
  return busy()
end
local count, held, current = lock_parse(redis.call('get', KEYS[1]))
if not count then
  return take(redis.call('incr', KEYS[2]))
end
if current == owner then
  if count == 0 then
    return take(redis.call('incr', KEYS[2]))
  end
  count = count + 1
  local value = lock_value(count, held, owner)
  -- re-entry never shortens the lease an outer hold asked for
  if redis.call('pttl', KEYS[1]) < tonumber(lease) then
    redis.call('set', KEYS[1], value, 'px', lease)
  else
    redis.call('set', KEYS[1], value, 'keepttl')
  end
  return {1, held, count}
end
return busy()

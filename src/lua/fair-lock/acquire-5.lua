--[[
  Acquire, re-enter or claim a fair lock, or join its queue.
  KEYS[1] the lock hash {o = owner, c = hold count (0 = granted, not yet claimed), t = fencing token, ch = grantee's channel}
  KEYS[2] the fencing counter of this name
  KEYS[3] the FIFO queue (list of owner ids)
  KEYS[4] waiters: owner id → its client's channel
  KEYS[5] clients: client channel → alive-until (Redis ms)
  ARGV[1] owner id
  ARGV[2] lease in ms
  ARGV[3] this client's id: its channel for this lock is KEYS[1] .. ':ch:' .. id (see fairChannel in src/keys.ts)
  ARGV[4] '1' to join the queue when the lock is not ours, '0' for a single attempt, '2' to claim a grant only: the
          hold count goes from 0 to 1 (never further, so a retried claim is harmless), nothing else is tried
  ARGV[5] the timing, "<alive>:<grant floor>:<state TTL>" (ms): how long this client counts as alive without a
          heartbeat, the least TTL of a grant, the TTL of the queue keys (refreshed by every waiter's heartbeat)
  ARGV[last] the publish command (appended by the client, see includes/notify.lua)
  Returns {1, token, holdCount} when acquired, re-entered or claimed; otherwise {0, pttl, queued (1/0), lastToken}
  (lastToken: the fencing counter now, see the end), pttl being
  what is left of the holder's lease (at most 50 ms for a grant not claimed yet): a waiter wakes then at the latest,
  so a lease that lapses is handed on at once, not at the next heartbeat.
  A free lock with live waiters goes to the head of the queue, never to a newcomer.
  @args [owner: string, leaseMs: number, clientId: string, mode: '0' | '1' | '2', timing: string]
  @reply [1, token: number, holdCount: number] | [0, pttl: number, queued: 0 | 1, lastToken: number]
]]
-- The common case first, before any helper is defined: a free lock nobody queues for (no lock hash, no queue) goes
-- to this owner at once (what advance() below would find: nobody to hand it to).
if ARGV[4] ~= '2' and redis.call('exists', KEYS[1], KEYS[3]) == 0 then
  local token = redis.call('incr', KEYS[2])
  redis.call('hset', KEYS[1], 'o', ARGV[1], 'c', 1, 't', token)
  redis.call('pexpire', KEYS[1], ARGV[2])
  return {1, token, 1}
end
--- @include "fair-advance"
local owner = ARGV[1]
local lease = tonumber(ARGV[2])
local ch = KEYS[1] .. ':ch:' .. ARGV[3]
local alive, grant_floor, state_ttl = string.match(ARGV[5], '^(%d+):(%d+):(%d+)$')

local v = redis.call('hmget', KEYS[1], 'o', 'c', 't')
local current = v[1]
if ARGV[4] == '2' then
  if current ~= owner then
    return {0, -1, 0}
  end
  local count = tonumber(v[2])
  if count == 0 then
    count = 1
    redis.call('hset', KEYS[1], 'c', 1)
    redis.call('pexpire', KEYS[1], lease)
  end
  return {1, tonumber(v[3]), count}
end
if not current then
  current = advance(KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5], redis_now(), tonumber(grant_floor))
  if not current then
    local token = redis.call('incr', KEYS[2])
    redis.call('hset', KEYS[1], 'o', owner, 'c', 1, 't', token)
    redis.call('pexpire', KEYS[1], lease)
    return {1, token, 1}
  end
end
if current == owner then
  local count = redis.call('hincrby', KEYS[1], 'c', 1)
  if count == 1 then
    -- claiming a grant: from here on the caller's lease applies (the stale 'ch' field is harmless: only a hold
    -- count of 0 makes it mean anything)
    redis.call('pexpire', KEYS[1], lease)
  elseif redis.call('pttl', KEYS[1]) < lease then
    -- re-entry never shortens the lease an outer hold asked for
    redis.call('pexpire', KEYS[1], lease)
  end
  if not v[3] then
    -- granted by advance() in this very call
    v[3] = redis.call('hget', KEYS[1], 't')
  end
  return {1, tonumber(v[3]), count}
end
local queued = 0
if ARGV[4] == '1' then
  queued = 1
  if redis.call('hsetnx', KEYS[4], owner, ch) == 1 then
    redis.call('rpush', KEYS[3], owner)
  end
  redis.call('hset', KEYS[5], ch, redis_now() + tonumber(alive))
  local ttl = tonumber(state_ttl)
  redis.call('pexpire', KEYS[3], ttl)
  redis.call('pexpire', KEYS[4], ttl)
  redis.call('pexpire', KEYS[5], ttl)
end
-- A queued waiter sleeps until its hand-off message, or until this lease lapses (an expiry publishes nothing): its
-- next attempt then hands the free lock to the head of the queue. A grant not claimed yet lives on the grantee's
-- alive time, but its claim is a round trip away and sets the grantee's own lease: look again soon.
local pttl = redis.call('pttl', KEYS[1])
if redis.call('hget', KEYS[1], 'c') == '0' then
  pttl = math.min(pttl, 50)
end
-- The counter's value now: a hand-off message with a token not above it was sent before this call ran, for a grant
-- this call found gone (or taken): the waiter must not act on it.
return {0, pttl, queued, tonumber(redis.call('get', KEYS[2]) or '0')}

--[[
  One client's heartbeat for all of its waiters on one fair lock (one call per client, however many of its waiters
  wait). Keeps the client alive in the queue, hands on a lock whose holder or grantee died (its key expired), and
  reports a grant to this client that it may have missed.
  KEYS[1] the lock hash
  KEYS[2] the fencing counter
  KEYS[3] the queue
  KEYS[4] waiters: owner id → channel
  KEYS[5] clients: channel → alive-until
  ARGV[1] this client's channel
  ARGV[2] alive time in ms
  ARGV[3] least TTL of a grant in ms
  ARGV[4] TTL in ms of the queue keys
  ARGV[last] the publish command (appended by the client, see includes/notify.lua)
  Returns {stale, grantee}: stale = 1 when this client had been counted dead (its queue entries may be gone: its
  waiters must try again), grantee = the owner id of this client's waiter the lock is granted to, or false.
  @args [channel: string, aliveMs: number, grantFloorMs: number, stateTtlMs: number]
  @reply [stale: 0 | 1, grantee: string | null]
]]
--- @include "fair-advance"
local ch = ARGV[1]
local now = redis_now()
local prev = tonumber(redis.call('hget', KEYS[5], ch) or '0')
redis.call('hset', KEYS[5], ch, now + tonumber(ARGV[2]))
local ttl = tonumber(ARGV[4])
redis.call('pexpire', KEYS[3], ttl)
redis.call('pexpire', KEYS[4], ttl)
redis.call('pexpire', KEYS[5], ttl)
local stale = 0
if prev <= now then
  stale = 1
end
if redis.call('exists', KEYS[1]) == 0 then
  advance(KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5], now, tonumber(ARGV[3]))
end
local v = redis.call('hmget', KEYS[1], 'o', 'c', 'ch')
if v[1] and v[2] == '0' and v[3] == ch then
  return {stale, v[1]}
end
return {stale, false}

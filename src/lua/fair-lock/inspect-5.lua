--[[
  Read a fair lock's state and its queue in one step.
  KEYS[1] the lock hash
  KEYS[2] the fencing counter
  KEYS[3] the queue
  KEYS[4] waiters: owner id → channel
  KEYS[5] clients: channel → alive-until
  ARGV[1] at most this many waiters to list
  ARGV[last] the publish command (appended by the client, see includes/notify.lua)
  Returns {owner or false, holdCount, token, pttl, lastToken, queueLength, {live waiter owner ids in order}}.
  queueLength counts entries not yet dropped, dead ones included; the list holds only waiters whose client is alive.
  @args [maxWaiters: number]
  @reply [owner: string | null, holdCount: number, token: number, pttl: number, lastToken: number, queueLength: number, waiters: Array<string>]
]]
--- @include "fair-advance"
local now = redis_now()
local v = redis.call('hmget', KEYS[1], 'o', 'c', 't')
local last = tonumber(redis.call('get', KEYS[2]) or '0')
local owners = redis.call('lrange', KEYS[3], 0, tonumber(ARGV[1]) - 1)
local live = {}
for _, owner in ipairs(owners) do
  local ch = redis.call('hget', KEYS[4], owner)
  if ch and tonumber(redis.call('hget', KEYS[5], ch) or '0') > now then
    live[#live + 1] = owner
  end
end
local qlen = redis.call('llen', KEYS[3])
if not v[1] then
  return {false, 0, 0, -2, last, qlen, live}
end
return {v[1], tonumber(v[2]), tonumber(v[3]), redis.call('pttl', KEYS[1]), last, qlen, live}

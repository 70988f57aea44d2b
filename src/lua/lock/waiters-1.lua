--[[
  Read a plain lock's waiters (read only: for `holdfast inspect` and the dashboard).
  KEYS[1] the waiters of other clients: owner id → when it first found the lock taken (Redis ms)
  ARGV[1] at most this many waiters to list
  Returns {Redis now (ms), waiters, owner 1, since 1, owner 2, since 2, …}, longest waiting first. An entry lives a
  short while after its waiter gave up (see acquire-3.lua), so the count is an upper bound for a few seconds.
  @args [maxWaiters: number]
  @reply [now: number, waiters: number, ...ownerThenSince: Array<string | number>]
]]
--- @include "redis-now"
local reply = {redis_now(), redis.call('zcard', KEYS[1])}
local waiters = redis.call('zrange', KEYS[1], 0, tonumber(ARGV[1]) - 1, 'withscores')
for i = 1, #waiters, 2 do
  reply[#reply + 1] = waiters[i]
  reply[#reply + 1] = tonumber(waiters[i + 1])
end
return reply

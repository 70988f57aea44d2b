--[[
  Read a permit-expirable semaphore's live leases (read only: for `holdfast inspect` and the dashboard). Expired
  leases are counted as free, as the next operation's reclaim will make them, without writing.
  KEYS[1] free permits
  KEYS[2] leases zset, permit id -> expiry (Redis ms, 'inf' without a lease)
  KEYS[3] permit id -> number of permits
  ARGV[1] at most this many leases to list
  Returns {free permits, permits held, live leases, id 1, permits 1, ms left 1 (-1: no lease), id 2, …}, soonest
  expiry first.
  @args [maxLeases: number]
  @reply [free: number, held: number, leases: number, ...idPermitsMsLeft: Array<string | number>]
]]
--- @include "redis-now"
local now = redis_now()
local free = tonumber(redis.call('get', KEYS[1]) or '0')
local held, count = 0, 0
local list = {}
local leases = redis.call('zrange', KEYS[2], 0, -1, 'withscores')
for i = 1, #leases, 2 do
  local id, score = leases[i], leases[i + 1]
  local permits = tonumber(redis.call('hget', KEYS[3], id) or '0')
  local left = -1
  if score ~= 'inf' and tonumber(score) ~= math.huge then
    left = tonumber(score) - now
  end
  if left == -1 or left > 0 then
    held = held + permits
    count = count + 1
    if count <= tonumber(ARGV[1]) then
      list[#list + 1] = id
      list[#list + 1] = permits
      list[#list + 1] = left
    end
  else
    free = free + permits
  end
end
local reply = {free, held, count}
for _, v in ipairs(list) do
  reply[#reply + 1] = v
end
return reply

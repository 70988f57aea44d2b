--[[
  Reclaim expired permits, then add ARGV[1] permits (negative removes) or, with ARGV[3] = 'nx', set the number of
  free permits only if the semaphore does not exist yet.
  KEYS[1] free permits
  KEYS[2] leases zset
  KEYS[3] permit id -> number of permits
  ARGV[1] permits
  ARGV[2] channel to publish on
  ARGV[3] 'add' or 'nx'
  ARGV[4] with 'nx': a TTL in ms for the semaphore (all three keys), or '0' for none (it persists)
  ARGV[last] the publish command (appended by the client, see includes/notify.lua)
  Returns {changed (1/0), free permits now}.
  @args [permits: number, channel: string, mode: 'add' | 'nx', ttlMs: number | '0']
  @reply [changed: 0 | 1, free: number]
]]
--- @include "notify"
--- @include "psem-reclaim"
local now = redis_now()
psem_reclaim(KEYS[1], KEYS[2], KEYS[3], ARGV[2], now)
local n = tonumber(ARGV[1])
if ARGV[3] == 'nx' then
  if redis.call('exists', KEYS[1]) == 1 or redis.call('exists', KEYS[2]) == 1 then
    return {0, tonumber(redis.call('get', KEYS[1]) or '0')}
  end
  if ARGV[4] ~= '0' then
    redis.call('set', KEYS[1], n, 'px', ARGV[4])
  else
    redis.call('set', KEYS[1], n)
  end
  notify(ARGV[2], 'a')
  return {1, n}
end
local free = redis.call('incrby', KEYS[1], n)
if n > 0 then
  notify(ARGV[2], 'a')
end
return {1, free}

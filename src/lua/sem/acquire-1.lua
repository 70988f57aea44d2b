--[[
  Take permits from a counting semaphore if enough are free.
  KEYS[1] the semaphore (free permits; absent = 0)
  ARGV[1] permits wanted
  Returns {1, free permits left} when taken, {0, free permits} when not enough are free.
  @args [permits: number]
  @reply [1, free: number] | [0, free: number]
]]
local want = tonumber(ARGV[1])
local free = tonumber(redis.call('get', KEYS[1]) or '0')
if free >= want then
  return {1, redis.call('decrby', KEYS[1], want)}
end
return {0, free}

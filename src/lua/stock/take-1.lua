--[[
  Take n units from one segment if it has them all.
  KEYS[1] the segment (a string holding an integer; missing = 0)
  ARGV[1] n > 0
  Returns {1, left in this segment} when taken, {0, what the segment has} when it is short.
  @args [n: number]
  @reply [1, left: number] | [0, have: number]
]]
local n = tonumber(ARGV[1])
local have = tonumber(redis.call('get', KEYS[1]) or '0')
if have >= n then
  return {1, redis.call('decrby', KEYS[1], n)}
end
return {0, have}

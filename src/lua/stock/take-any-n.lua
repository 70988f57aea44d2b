--[[
  Take n units from a segmented stock, seeing every segment at once (the fallback when the first segment was short):
  from the first segment, in order from ARGV[2], that has n alone, else combined from several. Never oversells,
  never refuses while the segments hold n in total.
  KEYS[1..N] every segment
  ARGV[1] n > 0
  ARGV[2] where to start looking (1-based), chosen at random by the caller to spread the load
  Returns {1, total left} when taken, {0, total} when the stock holds less than n.
  @args [n: number, start: number]
  @reply [1, left: number] | [0, total: number]
]]
local n = tonumber(ARGV[1])
local count = #KEYS
local start = tonumber(ARGV[2]) - 1
local have = {}
local total = 0
for i = 1, count do
  have[i] = tonumber(redis.call('get', KEYS[i]) or '0')
  total = total + have[i]
end
if total < n then
  return {0, total}
end
for k = 0, count - 1 do
  local i = (start + k) % count + 1
  if have[i] >= n then
    redis.call('decrby', KEYS[i], n)
    return {1, total - n}
  end
end
local left = n
for k = 0, count - 1 do
  local i = (start + k) % count + 1
  if have[i] > 0 then
    local take = math.min(have[i], left)
    redis.call('decrby', KEYS[i], take)
    left = left - take
    if left == 0 then
      break
    end
  end
end
return {1, total - n}

--[[
  Add to (or set) a segmented stock, spread evenly: each segment gets n / N, the remainder one unit each from ARGV[3].
  KEYS[1..N] every segment
  ARGV[1] n >= 0
  ARGV[2] 'set' to replace the stock with n, 'add' to add n
  ARGV[3] where the remainder starts (1-based)
  Returns the total after the change.
  @args [n: number, mode: 'set' | 'add', start: number]
  @reply number
]]
local n = tonumber(ARGV[1])
local count = #KEYS
local each = math.floor(n / count)
local rest = n - each * count
local start = tonumber(ARGV[3]) - 1
local total = 0
for k = 0, count - 1 do
  local i = (start + k) % count + 1
  local add = each
  if k < rest then
    add = add + 1
  end
  if ARGV[2] == 'set' then
    redis.call('set', KEYS[i], add)
    total = total + add
  else
    total = total + redis.call('incrby', KEYS[i], add)
  end
end
return total

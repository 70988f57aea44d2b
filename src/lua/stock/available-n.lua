--[[
  Read a segmented stock in one step.
  KEYS[1..N] every segment
  Returns {total, segment 1, segment 2, ...}.
  @args []
  @reply [total: number, ...segments: Array<number>]
]]
local out = {0}
for i = 1, #KEYS do
  local have = tonumber(redis.call('get', KEYS[i]) or '0')
  out[1] = out[1] + have
  out[i + 1] = have
end
return out

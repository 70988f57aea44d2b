--[[
  Set a latch's count if the latch does not exist (is not counting down already).
  KEYS[1] the latch count
  ARGV[1] count
  ARGV[2] TTL in ms, or '0' for none
  Returns 1 when set, 0 when the latch already existed (unchanged).
  @args [count: number, ttlMs: number]
  @reply 0 | 1
]]
local ok
if ARGV[2] ~= '0' then
  ok = redis.call('set', KEYS[1], ARGV[1], 'nx', 'px', ARGV[2])
else
  ok = redis.call('set', KEYS[1], ARGV[1], 'nx')
end
if ok then
  return 1
end
return 0

--[[
  Undo a claim whose reply never came (the client timed out while the claim waited in a stalled Redis): sent on the
  same connection right after the claim, so Redis runs it after the claim if the claim runs at all. The job is left
  as it was before that claim: not locked, and its tick not recorded, so later ticks (or a retry of this one) run.
  KEYS[1] the job hash (see claim-1.lua)
  ARGV[1] owner id of the claim
  Returns 1 when the claim had landed and was undone, 0 when it never landed (or another run holds the job since).
  @args [owner: string]
  @reply 0 | 1
]]
local v = redis.call('hmget', KEYS[1], 'o', 'p', 'pu')
if v[1] ~= ARGV[1] then
  return 0
end
redis.call('hdel', KEYS[1], 'o', 's', 'u', 'f', 'p', 'pu')
if v[2] and v[2] ~= '' then
  redis.call('hset', KEYS[1], 't', v[2])
else
  redis.call('hdel', KEYS[1], 't')
end
if v[3] and v[3] ~= '' then
  redis.call('hset', KEYS[1], 'tu', v[3])
else
  redis.call('hdel', KEYS[1], 'tu')
end
return 1

--[[
  Free a scheduled job whoever runs it (`holdfast unlock --force`): the claim of the run in progress (or the
  lockAtLeastFor wait after one) is dropped, so the job's next tick can be claimed. The tick memory stays: the tick
  that was claimed does not run again. The running instance's finish then records nothing (it no longer owns it).
  The record keeps its TTL.
  KEYS[1] the job hash (see claim-1.lua)
  Returns 1 when a run held the job (or a lockAtLeastFor wait was dropped), 0 when it was free.
  @args []
  @reply 0 | 1
]]
--- @include "redis-now"
local v = redis.call('hmget', KEYS[1], 'o', 'u')
local held = v[1] or (v[2] and tonumber(v[2]) > redis_now())
redis.call('hdel', KEYS[1], 'o', 's', 'u', 'f', 'p', 'pu')
if held then
  return 1
end
return 0

--[[
  Read a scheduled job's record with Redis' own time (for `holdfast jobs`).
  KEYS[1] the job hash (see claim-1.lua and finish-1.lua)
  Returns {now (Redis ms), field, value, field, value, …}; just {now} when there is no record.
  @args []
  @reply [now: number, ...fieldThenValue: Array<string>]
]]
--- @include "redis-now"
local reply = redis.call('hgetall', KEYS[1])
table.insert(reply, 1, redis_now())
return reply

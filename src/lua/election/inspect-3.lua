--[[
  Read an election's whole state in one step (for operators): the leader, the candidates still alive, the last term.
  KEYS[1] the leader hash {t = term, o = owner id, l = label, s = since}
  KEYS[2] the candidates that wait: "<owner id>|<label>" → until when the entry counts as alive (Redis ms)
  KEYS[3] the fencing counter of this name
  Returns {leader or false, {"<owner id>|<label>", ...}, lastTerm}; leader as {term, owner id, label, since, pttl}.
  @args []
  @reply [leader: [term: number, owner: string, label: string, since: number, pttl: number] | null, candidates: Array<string>, lastTerm: number]
]]
--- @include "redis-now"
local v = redis.call('hmget', KEYS[1], 't', 'o', 'l', 's')
local leader = false
if v[1] then
  leader = {tonumber(v[1]), v[2], v[3], tonumber(v[4]), redis.call('pttl', KEYS[1])}
end
local candidates = redis.call('zrangebyscore', KEYS[2], redis_now(), '+inf')
return {leader, candidates, tonumber(redis.call('get', KEYS[3]) or '0')}

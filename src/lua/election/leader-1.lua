--[[
  Read who leads, in one step.
  KEYS[1] the leader hash {t = term, o = owner id, l = label, s = since}
  Returns {term, owner id, label, since, pttl}, or false when nobody leads.
  @args []
  @reply [term: number, owner: string, label: string, since: number, pttl: number] | null
]]
local v = redis.call('hmget', KEYS[1], 't', 'o', 'l', 's')
if not v[1] then
  return false
end
return {tonumber(v[1]), v[2], v[3], tonumber(v[4]), redis.call('pttl', KEYS[1])}

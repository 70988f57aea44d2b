--[[
  Write (or delete) a fenced value unless a newer fencing token was already accepted.
  KEYS[1] the fenced hash {v = value, t = last accepted token}
  ARGV[1] the writer's fencing token
  ARGV[2] 'set' or 'del'
  ARGV[3] the value (for 'set')
  ARGV[4] TTL in ms for the whole record, or '0' to keep none
  Returns {1, token} when accepted; {0, last accepted token} when the token is older (the write is not applied).
  A token equal to the last accepted one is the same holder writing again, and is accepted. A delete keeps the
  token, or a stale writer could write again after it.
  @args [token: number, op: 'set' | 'del', value: string, ttlMs: number]
  @reply [1, token: number] | [0, lastToken: number]
]]
local token = tonumber(ARGV[1])
local last = tonumber(redis.call('hget', KEYS[1], 't') or '0')
if token < last then
  return {0, last}
end
if ARGV[2] == 'set' then
  redis.call('hset', KEYS[1], 'v', ARGV[3], 't', token)
else
  redis.call('hdel', KEYS[1], 'v')
  redis.call('hset', KEYS[1], 't', token)
end
if ARGV[4] ~= '0' then
  redis.call('pexpire', KEYS[1], ARGV[4])
else
  redis.call('persist', KEYS[1])
end
return {1, token}

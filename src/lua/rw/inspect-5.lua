--[[
  Read a read-write lock's state in one step.
  KEYS[1] the writer hash
  KEYS[2] readers zset
  KEYS[3] readers' hold counts hash
  KEYS[4] waiting writers' intents zset
  KEYS[5] the fencing counter
  Returns {writer or false, writer hold count, writer token, writer pttl, readers, waiting writers, lastToken}.
  @args []
  @reply [writer: string | null, writeHoldCount: number, token: number, pttl: number, readers: number, waitingWriters: number, lastToken: number]
]]
--- @include "redis-now"
local now = redis_now()
local w = redis.call('hmget', KEYS[1], 'o', 'c', 't')
local readers = redis.call('zcount', KEYS[2], '(' .. now, '+inf')
local intents = redis.call('zcount', KEYS[4], '(' .. now, '+inf')
local last = tonumber(redis.call('get', KEYS[5]) or '0')
if not w[1] then
  return {false, 0, 0, -2, readers, intents, last}
end
return {w[1], tonumber(w[2]), tonumber(w[3]), redis.call('pttl', KEYS[1]), readers, intents, last}

--[[
  Read a read-write lock's live readers with their owner ids (read only: for `holdfast inspect` and the dashboard,
  which show fingerprints and labels; `readers-3.lua` is the one an application calls).
  KEYS[1] readers zset, owner -> lease expiry (Redis ms)
  KEYS[2] readers' hold counts hash
  KEYS[3] waiting writers' intents zset (not read: the keys of the read side, for one hash slot)
  ARGV[1] at most this many readers to list
  Returns {owner 1, hold count 1, ms left 1, owner 2, …}, longest lease first.
  @args [maxReaders: number]
  @reply Array<string | number>
]]
--- @include "redis-now"
local now = redis_now()
local readers = redis.call('zrevrangebyscore', KEYS[1], '+inf', '(' .. now, 'withscores', 'limit', 0, tonumber(ARGV[1]))
local reply = {}
for i = 1, #readers, 2 do
  reply[#reply + 1] = readers[i]
  reply[#reply + 1] = tonumber(redis.call('hget', KEYS[2], readers[i]) or '0')
  reply[#reply + 1] = tonumber(readers[i + 1]) - now
end
return reply

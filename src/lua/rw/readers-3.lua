--[[
  The readers of a read-write lock, without their owner ids: each one's fingerprint (the first 12 hex digits of the
  SHA-1 of its owner id), hold count and remaining lease; and the hold count and lease of one owner.
  KEYS[1] readers zset, owner -> lease expiry (Redis ms)
  KEYS[2] readers' hold counts hash
  KEYS[3] waiting writers' intents zset (not read: the keys of the read side, for one hash slot)
  ARGV[1] an owner id to report on, or ''
  Returns {ARGV[1]'s hold count (0 when it holds no read lock), its ms left (-2 when none),
  fingerprint 1, hold count 1, ms left 1, fingerprint 2, ...} for the live readers, longest lease first.
  @args [owner: string]
  @reply [holdCount: number, pttl: number, ...readers: Array<string | number>]
]]
--- @include "redis-now"
local now = redis_now()
local reply = {0, -2}
if ARGV[1] ~= '' then
  local score = redis.call('zscore', KEYS[1], ARGV[1])
  if score and tonumber(score) > now then
    reply[1] = tonumber(redis.call('hget', KEYS[2], ARGV[1]) or '0')
    reply[2] = tonumber(score) - now
  end
end
local readers = redis.call('zrevrangebyscore', KEYS[1], '+inf', '(' .. now, 'withscores')
for i = 1, #readers, 2 do
  local owner = readers[i]
  reply[#reply + 1] = string.sub(redis.sha1hex(owner), 1, 12)
  reply[#reply + 1] = tonumber(redis.call('hget', KEYS[2], owner) or '0')
  reply[#reply + 1] = tonumber(readers[i + 1]) - now
end
return reply

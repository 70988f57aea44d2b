--[[
  Release one hold (or every hold) of a write lock, idempotently per request.
  KEYS[1] the writer hash
  KEYS[2] this request's release marker
  ARGV[1] owner id
  ARGV[2] channel to publish on
  ARGV[3] marker TTL in ms
  ARGV[4] '1' to release every hold of this owner at once, '0' for one
  Returns the holds left (0 = released, every waiter woken: readers and writers), or -1 when not held.
]]
local done = redis.call('get', KEYS[2])
if done then
  return tonumber(done)
end
if redis.call('hget', KEYS[1], 'o') ~= ARGV[1] then
  return -1
end
local left = 0
if ARGV[4] ~= '1' then
  left = redis.call('hincrby', KEYS[1], 'c', -1)
end
if left <= 0 then
  left = 0
  redis.call('del', KEYS[1])
  redis.call('publish', ARGV[2], 'a')
end
redis.call('set', KEYS[2], left, 'px', ARGV[3])
return left

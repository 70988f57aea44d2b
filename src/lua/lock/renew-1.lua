--[[
  Extend the lease of a lock this owner holds. Never revives an expired lock: an expired hash is gone.
  KEYS[1] the lock hash
  ARGV[1] owner id
  ARGV[2] new lease in ms
  Returns 1 when extended, 0 when this owner no longer holds the lock.
]]
if redis.call('hget', KEYS[1], 'o') == ARGV[1] then
  redis.call('pexpire', KEYS[1], ARGV[2])
  return 1
end
return 0

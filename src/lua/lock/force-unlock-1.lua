--[[
  Delete a lock whoever holds it, and wake its waiters.
  KEYS[1] the lock hash
  ARGV[1] channel to publish on
  Returns 1 when a lock was deleted, 0 when there was none.
]]
if redis.call('del', KEYS[1]) == 1 then
  redis.call('publish', ARGV[1], 'a')
  return 1
end
return 0

--[[
  Delete a lock whoever holds it, and wake its waiters.
  KEYS[1] the lock hash
  ARGV[1] channel to publish on
  ARGV[2] the publish command: 'publish', or 'spublish' for sharded pub/sub (Redis >= 7, cluster)
  Returns 1 when a lock was deleted, 0 when there was none.
]]
if redis.call('del', KEYS[1]) == 1 then
  redis.call(ARGV[2], ARGV[1], 'a')
  return 1
end
return 0

--[[
  A waiter that gives up (timeout, abort) leaves the waiters, so no release reserves the lock for it.
  KEYS[1] the waiters: owner id → when it first found the lock taken
  ARGV[1] owner id
  Returns 1 when it was listed.
  @args [owner: string]
  @reply 0 | 1
]]
return redis.call('zrem', KEYS[1], ARGV[1])

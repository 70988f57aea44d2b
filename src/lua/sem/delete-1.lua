--[[
  Delete a counting semaphore with its permits: DEL. Waiters keep waiting until it is set again.
  KEYS[1] the semaphore
  Returns 1 when it existed, 0 when not.
  @args []
  @reply 0 | 1
]]
return redis.call('del', KEYS[1])

--[[
  Whether a counting semaphore exists (set, and neither deleted nor expired): EXISTS.
  KEYS[1] the semaphore
  Returns 1 when it exists, 0 when not.
  @args []
  @reply 0 | 1
]]
return redis.call('exists', KEYS[1])

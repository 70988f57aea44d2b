--[[
  The free permits of a counting semaphore now: GET (0 for a semaphore that does not exist).
  KEYS[1] the semaphore
  Returns the number of free permits (may be below zero after addPermits with a negative number).
  @args []
  @reply number
]]
return tonumber(redis.call('get', KEYS[1]) or '0')

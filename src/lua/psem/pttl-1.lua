--[[
  The TTL of a permit-expirable semaphore itself (it lives on the count of free permits, see
  includes/psem-expiry.lua): PTTL.
  KEYS[1] free permits
  Returns ms until the semaphore expires, -1 when it has no TTL of its own, -2 when it does not exist.
  @args []
  @reply number
]]
return redis.call('pttl', KEYS[1])

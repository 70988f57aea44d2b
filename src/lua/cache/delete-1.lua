--[[
  CacheLoader.delete: forget a cached value (the next getOrLoad loads again). A load in progress is left alone.
  KEYS[1] the cached value
  Returns 1 when there was a value, else 0.
  @args []
  @reply 0 | 1
]]
return redis.call('del', KEYS[1])

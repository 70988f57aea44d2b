--[[
  CacheLoader.get: read a cached value as stored.
  KEYS[1] the cached value (a string: 'v' .. encoded value, or 'e' .. error JSON when errors are cached)
  Returns the stored string, or nil (null) on a miss.
  @args []
  @reply string | null
]]
return redis.call('get', KEYS[1])

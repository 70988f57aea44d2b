--[[
  Read a client's label.
  KEYS[1] the label key
  Returns the label, or nil (null) when the client set none or is gone.
  @args []
  @reply string | null
]]
return redis.call('get', KEYS[1])

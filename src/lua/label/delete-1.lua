--[[
  Delete a client's label (the client closes).
  KEYS[1] the label key
  Returns 1 when there was one, else 0.
  @args []
  @reply 0 | 1
]]
return redis.call('del', KEYS[1])

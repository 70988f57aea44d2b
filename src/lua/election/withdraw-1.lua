--[[
  A candidate that gives up waiting (timeout, abort) leaves the candidates.
  KEYS[1] the candidates: "<owner id>|<label>" → until when alive
  ARGV[1] the candidate's member "<owner id>|<label>"
  Returns 1 when it was listed.
  @args [member: string]
  @reply 0 | 1
]]
return redis.call('zrem', KEYS[1], ARGV[1])

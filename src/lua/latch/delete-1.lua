--[[
  Delete a latch (open it) and wake every waiter.
  KEYS[1] the latch count
  ARGV[1] channel to publish on
  Returns 1 when the latch existed, else 0.
]]
if redis.call('del', KEYS[1]) == 1 then
  redis.call('publish', ARGV[1], 'a')
  return 1
end
return 0

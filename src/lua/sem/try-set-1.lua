--[[
  Set the number of permits of a semaphore that does not exist yet.
  KEYS[1] the semaphore
  ARGV[1] permits
  ARGV[2] channel to publish on
  Returns 1 when set, 0 when the semaphore already existed (unchanged).
]]
if redis.call('set', KEYS[1], ARGV[1], 'nx') then
  redis.call('publish', ARGV[2], 'a')
  return 1
end
return 0

--[[
  One node's part of a Redlock semaphore release: delete the permit slots this owner holds here.
  KEYS[1..] permit slots (others' slots among them are left alone)
  ARGV[1] owner id
  Returns how many slots were deleted.
  @args [owner: string]
  @reply number
]]
local deleted = 0
for i = 1, #KEYS do
  if redis.call('get', KEYS[i]) == ARGV[1] then
    redis.call('del', KEYS[i])
    deleted = deleted + 1
  end
end
return deleted

--[[
  One node's part of a Redlock semaphore renewal: extend this owner's permit slots, and take back a slot this node
  lost (it restarted empty, or the key was evicted), as redlock/renew does; never a slot another owner holds here.
  Only while the hold is live: no renewal is sent once a release of it may have run (see redlock/renew).
  KEYS[1..] the owner's permit slots
  ARGV[1] owner id
  ARGV[2] lease in ms
  Returns how many of KEYS this owner holds here now (all of them: the node counts towards the quorum).
  @args [owner: string, leaseMs: number]
  @reply number
]]
local held = 0
for i = 1, #KEYS do
  local owner = redis.call('get', KEYS[i])
  if owner == ARGV[1] then
    redis.call('pexpire', KEYS[i], ARGV[2])
    held = held + 1
  elseif not owner then
    redis.call('set', KEYS[i], ARGV[1], 'px', ARGV[2])
    held = held + 1
  end
end
return held

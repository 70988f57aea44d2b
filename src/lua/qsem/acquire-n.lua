--[[
  One node's part of a Redlock semaphore attempt: take `n` permit slots for this owner, the first free ones in the
  order given, all or none. A slot is a key holding its owner id, with the lease as its TTL (a Redlock lock of its own).
  KEYS[1..] the semaphore's permit slots, in this attempt's order (every node is given the same order)
  ARGV[1] owner id
  ARGV[2] lease in ms
  ARGV[3] n, the slots wanted
  Returns {1, i1, i2, ...}: the KEYS indexes taken; {0, ms until the soonest busy slot frees} when fewer than n are free.
  @args [owner: string, leaseMs: number, want: number]
  @reply [1, ...taken: Array<number>] | [0, retryInMs: number]
]]
local want = tonumber(ARGV[3])
local free = {}
local soonest = -1
for i = 1, #KEYS do
  local pttl = redis.call('pttl', KEYS[i])
  if pttl == -2 then
    free[#free + 1] = i
    if #free == want then
      break
    end
  elseif pttl >= 0 and (soonest < 0 or pttl < soonest) then
    soonest = pttl
  end
end
if #free < want then
  return {0, soonest}
end
local reply = {1}
for _, i in ipairs(free) do
  redis.call('set', KEYS[i], ARGV[1], 'px', ARGV[2])
  reply[#reply + 1] = i
end
return reply

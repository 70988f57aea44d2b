--[[
  Extend the lease of a hold kept as a hash with its owner in field `o` (the fair lock, the read-write lock's writer,
  getOrLoad's load lock). Never revives an expired hold: an expired hash is gone.
  KEYS[1] the hash
  ARGV[1] owner id
  ARGV[2] new lease in ms
  Returns 1 when extended, 0 when this owner no longer holds it.
  @args [owner: string, leaseMs: number]
  @reply 0 | 1
]]
if redis.call('hget', KEYS[1], 'o') == ARGV[1] then
  redis.call('pexpire', KEYS[1], ARGV[2])
  return 1
end
return 0

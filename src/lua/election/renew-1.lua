--[[
  Extend the lease of a leader. Never revives an expired leadership: an expired key is gone.
  KEYS[1] the leader hash {t, o, l, s}
  ARGV[1] owner id
  ARGV[2] new lease in ms
  Returns 1 when extended, 0 when this owner no longer leads.
  @args [owner: string, leaseMs: number]
  @reply 0 | 1
]]
if redis.call('hget', KEYS[1], 'o') == ARGV[1] then
  redis.call('pexpire', KEYS[1], ARGV[2])
  return 1
end
return 0

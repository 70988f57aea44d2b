--[[
  Give a permit-expirable semaphore a TTL of its own (all three keys, with every lease and permit in them), or take it
  away ('0': the semaphore persists).
  KEYS[1] free permits
  KEYS[2] leases zset
  KEYS[3] permit id -> number of permits
  ARGV[1] the TTL in ms, or '0' to persist
  Returns 1 when the semaphore exists, 0 when it does not (nothing done).
  @args [ttlMs: number | '0']
  @reply 0 | 1
]]
if redis.call('exists', KEYS[1]) == 0 then
  return 0
end
for i = 1, 3 do
  if ARGV[1] == '0' then
    redis.call('persist', KEYS[i])
  else
    redis.call('pexpire', KEYS[i], ARGV[1])
  end
end
return 1

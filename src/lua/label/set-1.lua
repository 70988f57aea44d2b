--[[
  Write (or refresh) a client's label (the `label` client option), for inspections in other processes.
  KEYS[1] the label key (Keys.clientLabel, by the fingerprint of the client id)
  ARGV[1] the label
  ARGV[2] its TTL in ms (refreshed while the client lives)
  Returns 1.
  @args [label: string, ttlMs: number]
  @reply 1
]]
redis.call('set', KEYS[1], ARGV[1], 'px', ARGV[2])
return 1

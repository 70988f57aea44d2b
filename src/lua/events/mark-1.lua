--[[
  Set (or keep) an events marker: while it lives, the fair lock's and the read-write lock's releases publish on their
  events channel (see src/internal/events.ts).
  KEYS[1] the events marker
  ARGV[1] its TTL in ms
  Returns 1.
  @args [ttlMs: number]
  @reply 1
]]
redis.call('set', KEYS[1], '1', 'px', ARGV[1])
return 1

--[[
  Redlock's renewal on one node: extend this owner's lease, or take the key back where this node lost it (it
  restarted empty, or the key was evicted), so that restarting the nodes one at a time never drops a lock a majority
  held throughout. Never where another owner holds it. Taking a key back is right only while the hold is live: the
  client sends no renewal once a release of the hold may have run (it stops the watchdog and waits for a renewal in
  flight before the release goes out, see `Lease.suspend` in src/internal/lease.ts), and on one connection a renewal
  sent before the release runs before it. So a missing key here is one this node lost, never one a release deleted.
  KEYS[1] the lock: "<hold count>:<fencing token>:<owner id>"
  KEYS[2] this node's fencing counter
  ARGV[1] owner id
  ARGV[2] lease in ms
  ARGV[3] the Redlock's fencing token
  Returns 1 when extended, 2 when taken back, 0 when another owner holds the lock here.
  @args [owner: string, leaseMs: number, token: number]
  @reply 0 | 1 | 2
]]
--- @include "lock-value"
local value = redis.call('get', KEYS[1])
if not value then
  redis.call('set', KEYS[1], lock_value(1, ARGV[3], ARGV[1]), 'px', ARGV[2])
  -- a counter that restarted empty must not mint tokens below this one again
  if tonumber(redis.call('get', KEYS[2]) or '0') < tonumber(ARGV[3]) then
    redis.call('set', KEYS[2], ARGV[3])
  end
  return 2
end
local _, _, owner = lock_parse(value)
if owner ~= ARGV[1] then
  return 0
end
redis.call('pexpire', KEYS[1], ARGV[2])
return 1

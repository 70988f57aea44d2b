--[[
  Step down: delete the leader if this owner leads, and wake one waiting candidate in each process (and every
  observer), so that the next leader is elected within a round trip instead of a lease.
  KEYS[1] the leader hash {t, o, l, s}
  ARGV[1] owner id
  ARGV[2] the election's channel
  ARGV[last] the publish command (appended by the client, see includes/notify.lua)
  Returns 0 when it stepped down, -1 (RELEASE_REPLY.NOT_HELD) when this owner does not lead (a retry whose first run
  stepped down finds the key gone too: the client reads that as done when it led when it first sent it).
  @args [owner: string, channel: string]
  @reply 0 | -1
]]
--- @include "notify"
if redis.call('hget', KEYS[1], 'o') ~= ARGV[1] then
  return -1
end
redis.call('del', KEYS[1])
notify(ARGV[2], '1')
return 0

--[[
  One attempt of a candidate to become the leader of an election.
  KEYS[1] the leader: a hash {t = term, o = owner id, l = label, s = since (Redis ms)} with the lease as its TTL
  KEYS[2] the fencing counter of this name (shared by its slot, see src/keys.ts): the term is minted from it, so it
          only grows and doubles as a fencing token
  KEYS[3] the candidates that wait: "<owner id>|<label>" → until when the entry counts as alive (Redis ms)
  ARGV[1] owner id (never contains "|")
  ARGV[2] lease in ms
  ARGV[3] label
  ARGV[4] 1 when the caller waits if it finds a leader (it is listed among the candidates then), 0 for one attempt
  ARGV[5] the election's channel
  ARGV[last] the publish command (appended by the client, see includes/notify.lua)
  A candidate entry lives 3 × lease (at least 10 s) without a new attempt; a waiting candidate attempts at least once
  per remaining lease of the leader, because an expiry publishes nothing.
  Returns {1, term, since} when this owner now leads (also when it led already: a request delivered twice after a
  reconnect reports the first run), {0, pttl} when another owner leads.
  @args [owner: string, leaseMs: number, label: string, waits: '0' | '1', channel: string]
  @reply [1, term: number, since: number] | [0, pttl: number]
]]
--- @include "notify"
--- @include "redis-now"
local owner = ARGV[1]
local member = owner .. '|' .. ARGV[3]
local current = redis.call('hmget', KEYS[1], 'o', 't', 's')
if current[1] then
  if current[1] == owner then
    return {1, tonumber(current[2]), tonumber(current[3])}
  end
  if ARGV[4] == '1' then
    local lease = tonumber(ARGV[2])
    redis.call('zadd', KEYS[3], redis_now() + math.max(10000, 3 * lease), member)
    redis.call('pexpire', KEYS[3], math.max(10000, 3 * lease))
  end
  return {0, redis.call('pttl', KEYS[1])}
end
local term = redis.call('incr', KEYS[2])
local now = redis_now()
redis.call('hset', KEYS[1], 't', term, 'o', owner, 'l', ARGV[3], 's', now)
redis.call('pexpire', KEYS[1], ARGV[2])
redis.call('zrem', KEYS[3], member)
-- "=" + a tag no candidate listens under: observers hear it, no candidate is woken for nothing
notify(ARGV[5], '=elected:' .. term)
return {1, term, now}

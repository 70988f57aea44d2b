--[[
  getOrLoad: read the value, or become the one loader, or learn who is loading. Checks the value again in the same
  step that takes the load lock, so nobody loads once a value is there.
  KEYS[1] the cached value (a string: 'v' .. encoded value, or 'e' .. error JSON when errors are cached)
  KEYS[2] the load lock hash {o = owner id of the load}
  KEYS[3] the last failed load {i = its owner id, e = error JSON}
  ARGV[1] owner id for a new load
  ARGV[2] load lease in ms
  ARGV[3] the load this caller saw in progress ('' if none): its failure is reported to this caller
  Returns {2, value} on a hit; {4, errorJson} when the load this caller waited for failed;
  {1} when this caller must load; {0, pttl, loadOwner} while another load runs (CACHE_CLAIM in src/lua/codes.ts).
  @args [owner: string, leaseMs: number, seenLoad: string]
  @reply [2, value: string] | [4, errorJson: string] | [1] | [0, pttl: number, loadOwner: string]
]]
local v = redis.call('get', KEYS[1])
if v then
  return {2, v}
end
if ARGV[3] ~= '' then
  local e = redis.call('hmget', KEYS[3], 'i', 'e')
  if e[1] == ARGV[3] then
    return {4, e[2]}
  end
end
local o = redis.call('hget', KEYS[2], 'o')
if o then
  return {0, redis.call('pttl', KEYS[2]), o}
end
redis.call('hset', KEYS[2], 'o', ARGV[1])
redis.call('pexpire', KEYS[2], ARGV[2])
return {1}

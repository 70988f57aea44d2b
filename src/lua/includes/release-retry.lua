-- The release marker of one release request: the holds left that an earlier run of the same request recorded. It is
-- checked on every run, not only on the client's own retries: a client that resends the commands in flight after a
-- reconnect (ioredis) can deliver the very same request twice, and its second copy must not give up a second hold.
-- A release the client expects to free the lock is sent without a marker (`marker` nil): a second run of a full
-- release finds the lock gone, and the client reads that as "released" only when the reply came before the hold's
-- deadline (see the release rule in src/internal/hold.ts).

-- What an earlier run of this request returned, or nil (also when the request has no marker).
local function release_retried(marker)
  if not marker then
    return nil
  end
  local done = redis.call('get', marker)
  if done then
    return tonumber(done)
  end
  return nil
end

-- A release that leaves `left` holds: records it in the request's marker for `ttl` ms and returns it. Call it only
-- after checking that the request has a marker (without one, the script changes nothing and returns -2).
local function release_kept(marker, left, ttl)
  redis.call('set', marker, left, 'px', ttl)
  return left
end

-- An earlier run of this release request: the holds left that it recorded in the request's marker, or nil. Checked on
-- every run, not only on the client's own retries: a client that resends the commands in flight after a reconnect
-- (ioredis) can deliver the very same request twice, and its second copy must not give up a second hold. (A full
-- release leaves no marker: a second run then finds the lock gone, and the client reads that as "released" when it
-- held the lock when it first sent the request.)
local function release_retried(marker)
  local done = redis.call('get', marker)
  if done then
    return tonumber(done)
  end
  return nil
end

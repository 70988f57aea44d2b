-- A retry of a release request whose reply was lost (`isRetry` = '1'): the holds left that its first run recorded in
-- the request's marker, or nil (a full release leaves no marker: the retry then finds the lock gone, and the client
-- reads that as "released" when it held the lock when it first sent the request).
local function release_retried(marker, isRetry)
  if isRetry == '1' then
    local done = redis.call('get', marker)
    if done then
      return tonumber(done)
    end
  end
  return nil
end

--- @include "notify"
--- @include "redis-now"

-- Hands a free fair lock to the first live waiter of the queue: pops entries until one whose client is still alive
-- (its alive-until in `clients` is in the future), makes it the owner with hold count 0 ("granted, not yet claimed"),
-- mints its fencing token, gives the grant a TTL of what is left of its client's alive time (at least `floorMs`), and
-- tells only that waiter, on its client's channel: "+<token>:<owner>" (through `notify`: SPUBLISH under sharded pub/sub). Entries of dead clients are dropped on the way:
-- each entry is popped once, so the work per hand-off is O(1) amortized however many wait.
-- The grant outlives the alive time the waiter's own last queued attempt set (a refresh only moves it later), so the
-- waiter may count itself the holder from that attempt's send time + the alive time, before it claims (see FairLock).
-- Returns the new owner, or false when nobody alive waits.
local function advance(lockKey, fenceKey, queueKey, waitersKey, clientsKey, now, floorMs)
  while true do
    local owner = redis.call('lpop', queueKey)
    if not owner then
      return false
    end
    local ch = redis.call('hget', waitersKey, owner)
    redis.call('hdel', waitersKey, owner)
    if ch then
      local aliveUntil = tonumber(redis.call('hget', clientsKey, ch) or '0')
      if aliveUntil > now then
        local token = redis.call('incr', fenceKey)
        redis.call('hset', lockKey, 'o', owner, 'c', 0, 't', token, 'ch', ch)
        redis.call('pexpire', lockKey, math.max(aliveUntil - now, floorMs))
        notify(ch, '+' .. token .. ':' .. owner)
        return owner
      end
      redis.call('hdel', clientsKey, ch)
    end
  end
end

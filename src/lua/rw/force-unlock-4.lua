--[[
  Delete a read-write lock's writer and every reader, whoever holds them, and wake every waiter. Waiting writers'
  intents stay: they still go before new readers.
  KEYS[1] the writer hash
  KEYS[2] readers zset
  KEYS[3] readers' hold counts hash
  KEYS[4] waiting writers' intents zset (not touched; the keys of the lock, for one hash slot)
  ARGV[1] channel to publish on
  ARGV[last] the publish command (appended by the client, see includes/notify.lua)
  Returns 1 when a writer or a reader was deleted, 0 when the lock was free.
]]
--- @include "notify"
if redis.call('del', KEYS[1], KEYS[2], KEYS[3]) > 0 then
  notify(ARGV[1], 'a')
  return 1
end
return 0

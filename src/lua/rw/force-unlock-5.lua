--[[
  Delete a read-write lock's writer and every reader, whoever holds them, and wake every waiter. Waiting writers'
  intents stay: they still go before new readers.
  KEYS[1] the writer hash
  KEYS[2] readers zset
  KEYS[3] readers' hold counts hash
  KEYS[4] waiting writers' intents zset (not touched; the keys of the lock, for one hash slot)
  KEYS[5] the events marker: present while someone waits for the lock to be free or listens for its releases
  ARGV[1] channel to publish on
  ARGV[2] the events channel: 'a' is published there too, only while the events marker exists
  ARGV[last] the publish command (appended by the client, see includes/notify.lua)
  Returns 1 when a writer or a reader was deleted, 0 when the lock was free.
  @args [channel: string, eventsChannel: string]
  @reply 0 | 1
]]
--- @include "notify"
if redis.call('del', KEYS[1], KEYS[2], KEYS[3]) > 0 then
  notify(ARGV[1], 'a')
  if redis.call('exists', KEYS[5]) == 1 then
    notify(ARGV[2], 'a')
  end
  return 1
end
return 0

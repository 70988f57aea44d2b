-- notify(channel, message): publishes a wake-up with the command the client chose: PUBLISH, or SPUBLISH under
-- sharded pub/sub (Redis >= 7, Cluster). The client appends that command as the LAST argument of every script that
-- includes this file (runScript in src/script.ts does it), so ARGV[#ARGV] is never one of the script's own arguments.
local function notify(channel, message)
  local command = ARGV[#ARGV]
  if command ~= 'publish' and command ~= 'spublish' then
    error('holdfast: the last argument must be the publish command, got ' .. tostring(command))
  end
  redis.call(command, channel, message)
end

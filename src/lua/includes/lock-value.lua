-- The plain lock's value (see src/keys.ts): "<hold count>:<fencing token>:<owner id>", the lease as the key's TTL.
local function lock_value(count, token, owner)
  return count .. ':' .. token .. ':' .. owner
end
-- Returns hold count, token (numbers) and owner of a lock value, or nothing for a missing key (false).
local function lock_parse(v)
  if not v then
    return nil
  end
  local count, token, owner = string.match(v, '^(%d+):(%d+):(.*)$')
  return tonumber(count), tonumber(token), owner
end

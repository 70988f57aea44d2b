-- A read-write lock's channels, built from its writer key "<base>:rw:w" (the key layout of src/keys.ts) rather than
-- sent with every request: rw_channel(writer, 'ch') wakes waiters, rw_channel(writer, 'ev') carries release events.
local function rw_channel(writer, suffix)
  return string.sub(writer, 1, -2) .. suffix
end

-- KEYS: 1 fencing counter. ARGV: 1 fence.
-- RedLock: raises the counter to ARGV[1] so the next majority, which meets
-- this one on at least one server, counts past it; it lapses a day later,
-- as the acquire script's does. Returns the new value.
-- numkeys: 1

local cur = tonumber(redis.call('GET', KEYS[1]) or '0')
local want = tonumber(ARGV[1])
if cur < want then
  redis.call('SET', KEYS[1], ARGV[1], 'PX', 86400000)
  return want
end
return cur

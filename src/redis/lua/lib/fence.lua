-- next_fence(key, grain, token, info): the next fencing token, stored in
-- the counter's key (see holder.lua) with token's info when they are
-- given (an exclusive holder's). Returns it as a number and as digits.
-- The larger of the counter + 1 and the server's clock in microseconds:
-- so a counter that lost its last increments (a replica promoted before
-- it had them, a restart without persistence, an eviction) still counts
-- past every fence handed out before, as long as this server's clock is
-- not behind the clock of the one that handed it out by more than the
-- time since (a failover takes seconds; NTP keeps clocks within
-- milliseconds), and acquisitions come less than once a microsecond.
-- Below 2^53 for centuries: exact as a Lua number. The key goes a day
-- after the lock was last taken, as a lock named per build would
-- otherwise leave one for ever.
-- RedLock (grain, in microseconds, above 1): the clock counts only in
-- whole grains while the counter is there, so that servers whose clocks
-- agree to the grain hand out one fence, and the write-back to those
-- behind (fence_max.lua) is a round trip seldom paid. Then a lost
-- increment is counted past once the clock has reached the next grain;
-- the next majority also meets this one on a server that did not lose it.
local function next_fence(key, grain, token, info)
  local t = redis.call('TIME')
  local v = redis.call('GET', key)	-- "F" or "F\tTOKEN\tINFO": counter()
  local c = tonumber(v and v:match('^[0-9]+') or '0')
  local us = t[1] * 1000000 + t[2]
  if c > 0 and grain > 1 then us = us - us % grain end
  local n = math.max(c + 1, us)
  local f = string.format('%d', n)
  if token then
    redis.call('SET', key, f .. '\t' .. token .. '\t' .. info .. '\t' .. f,
      'PX', 86400000)
  else
    redis.call('SET', key, f, 'PX', 86400000)
  end
  return n, f
end

-- KEYS: 1 fair queue (and KEYS[1]..':info', its waiters' holder info),
-- 2 waiters, 3 wake list, 4 exclusive waiters.
-- ARGV: 1 token.
-- A waiter that stops waiting (acquired elsewhere, gave up, interrupted)
-- leaves the waiters, the queue and the writers; the queue's new head is
-- woken, and when a writer leaves, whoever waited behind it.
-- numkeys: 4

-- include: lib/wake.lua
local t = redis.call('TIME')
local now = t[1] * 1000 + math.floor(t[2] / 1000)
redis.call('ZREM', KEYS[1], ARGV[1])
redis.call('HDEL', KEYS[1] .. ':info', ARGV[1])
redis.call('ZREM', KEYS[2], ARGV[1])
redis.call('DEL', KEYS[3] .. ':' .. ARGV[1])
if redis.call('ZREM', KEYS[4], ARGV[1]) == 1 or
    redis.call('ZCARD', KEYS[1]) > 0 then
  wake(KEYS[1], KEYS[3], KEYS[2], KEYS[4], now)
end
return 1

-- KEYS: 1 fair queue (and KEYS[1]..':info', its waiters' holder info),
-- 2 waiters, 3 wake list, 4 exclusive waiters.
-- ARGV: 1 token.
-- A waiter that stops waiting (acquired elsewhere, gave up, interrupted)
-- leaves the waiters, the queue and the writers; the queue's new head is
-- woken, and when a writer leaves, whoever waited behind it.
-- numkeys: 4

-- Wakes one waiter, if anyone waits (every waiter is in waiters): a
-- live exclusive waiter (writers first) when writers is given, else
-- the head of the fair queue, each on its own list; else whoever has
-- waited longest on the common one (BLPOP serves in order). An
-- element nobody takes goes after 2 s: it is for a waiter between
-- its refusal and its BLPOP.
local function wake(queue, list, waiters, writers, now)
  if redis.call('ZCARD', waiters) == 0 then return end
  local head = writers and redis.call('ZRANGEBYSCORE', writers,
    '(' .. now, '+inf', 'LIMIT', 0, 1) or {}
  if #head == 0 then head = redis.call('ZRANGE', queue, 0, 0) end
  if #head > 0 then list = list .. ':' .. head[1] end
  redis.call('LPUSH', list, '1')
  redis.call('LTRIM', list, 0, 0)
  redis.call('PEXPIRE', list, 2000)
end
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

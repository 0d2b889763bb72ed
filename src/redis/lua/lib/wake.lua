-- wake(queue, list, waiters, writers, now): wakes one waiter, if anyone
-- waits (every waiter is in waiters): a live exclusive waiter (writers
-- first) when writers is given, else the head of the fair queue, each on
-- its own list; else whoever has waited longest on the common one (BLPOP
-- serves in order). An element nobody takes goes after 2 s: it is for a
-- waiter between its refusal and its BLPOP.
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

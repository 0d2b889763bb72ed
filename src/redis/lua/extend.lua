-- KEYS: 1 lock, 2 holder info, 3 mode of a shared lock, 4 --limit slots
-- (acquire's 1, 3, 4, 7).
-- ARGV: 1 token, 2 ttl ms.
-- Returns 1 when extended, 0 when the lock is not ours (any more).
-- numkeys: 4

local t = redis.call('TIME')
local now = t[1] * 1000 + math.floor(t[2] / 1000)
-- a lock --min-hold keeps after its job is never lengthened
local info = redis.call('HGET', KEYS[2], ARGV[1])
if info and info:match('^' .. string.rep('[^\t]*\t', 6) .. '[0-9]+$') then
  return 0
end
local kind = redis.call('TYPE', KEYS[1]).ok
if kind == 'string' then
  if redis.call('GET', KEYS[1]) ~= ARGV[1] then return 0 end
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
  redis.call('PEXPIRE', KEYS[2], ARGV[2])
  return 1
end
if kind ~= 'zset' then return 0 end
local s = redis.call('ZSCORE', KEYS[1], ARGV[1])
if not s or tonumber(s) <= now then return 0 end
local slot = redis.call('HGET', KEYS[4], ARGV[1])
if slot then
  -- a slot that lapsed may have gone to someone else: not ours then
  if redis.call('GET', KEYS[4] .. ':' .. slot) ~= ARGV[1] then return 0 end
  redis.call('PEXPIRE', KEYS[4] .. ':' .. slot, ARGV[2])
end
redis.call('ZADD', KEYS[1], 'XX', now + tonumber(ARGV[2]), ARGV[1])
local last = redis.call('ZRANGE', KEYS[1], -1, -1, 'WITHSCORES')
local left = math.max(1, tonumber(last[2]) - now)
redis.call('PEXPIRE', KEYS[1], left)
redis.call('PEXPIRE', KEYS[3], left)
redis.call('PEXPIRE', KEYS[4], left)
redis.call('PEXPIRE', KEYS[2], left)
return 1

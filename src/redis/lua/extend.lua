-- KEYS: 1 lock, 2 holder info (shared, --limit), 3 mode of a shared lock,
-- 4 --limit slots (acquire's 1, 3, 4, 7), 5 the fencing counter (and an
-- exclusive holder's info: acquire's 2).
-- ARGV: 1 token, 2 ttl ms.
-- The lease then lasts at least ARGV[2] ms more: never less than it
-- already had. A `dlock extend -t 1` run inside a job (DLOCK_KEY and
-- DLOCK_TOKEN name the running holder's lock) must not cut the lease that
-- the running dlock renews every TTL/3, or the lock would lapse under the
-- job and another holder run beside it.
-- Returns 1 when extended, 0 when the lock is not ours (any more).
-- numkeys: 5

local t = redis.call('TIME')
local now = t[1] * 1000 + math.floor(t[2] / 1000)
local ttl = tonumber(ARGV[2])
-- include: lib/holder.lua
local kind = redis.call('TYPE', KEYS[1]).ok
if kind ~= 'string' and kind ~= 'zset' then return 0 end
-- a lock --min-hold keeps after its job is never lengthened
if finished(info_of(ARGV[1], kind, KEYS[5], KEYS[2])) then return 0 end
-- key's lease: at least ttl from now
local function lengthen(key)
  if redis.call('PTTL', key) < ttl then redis.call('PEXPIRE', key, ttl) end
end
if kind == 'string' then
  if redis.call('GET', KEYS[1]) ~= ARGV[1] then return 0 end
  lengthen(KEYS[1])
  return 1
end
local s = redis.call('ZSCORE', KEYS[1], ARGV[1])
if not s or tonumber(s) <= now then return 0 end
local slot = redis.call('HGET', KEYS[4], ARGV[1])
if slot then
  -- a slot that lapsed may have gone to someone else: not ours then
  if redis.call('GET', KEYS[4] .. ':' .. slot) ~= ARGV[1] then return 0 end
  lengthen(KEYS[4] .. ':' .. slot)
end
redis.call('ZADD', KEYS[1], 'XX', math.max(tonumber(s), now + ttl), ARGV[1])
local last = redis.call('ZRANGE', KEYS[1], -1, -1, 'WITHSCORES')
local left = math.max(1, tonumber(last[2]) - now)
redis.call('PEXPIRE', KEYS[1], left)
redis.call('PEXPIRE', KEYS[3], left)
redis.call('PEXPIRE', KEYS[4], left)
redis.call('PEXPIRE', KEYS[2], left)
return 1

-- KEYS: as release.lua's. ARGV: 1 events the history keeps ('0':
-- none), 2 the breaker's holder info, 3 what each holder is told.
-- dlock release --force: every holder of the lock, dlock's in any mode or
-- another client's string, loses it; each is pushed a notice on its list
-- (a running dlock BLPOPs it, and is told at once) and gets a "broken"
-- event with the breaker as "by". A key that does not expire, or of
-- another type, or a sorted set without dlock's mode key, is left alone.
-- Returns {1, type, pttl, token, info, token, info...} when broken (info
-- '' for a foreign holder), {0, type, pttl} when no lease was there, or
-- {-1, type, pttl} for a key left alone.
-- numkeys: 11

local t = redis.call('TIME')
local now = t[1] * 1000 + math.floor(t[2] / 1000)
-- include: lib/wake.lua
-- include: lib/holder.lua
local kind = redis.call('TYPE', KEYS[1]).ok
local pttl = redis.call('PTTL', KEYS[1])
if kind == 'none' then return {0, kind, pttl} end
-- Never a key that does not expire, or that is no lock: reported only.
if pttl < 0 or (kind ~= 'string' and kind ~= 'zset') or
    (kind == 'zset' and redis.call('EXISTS', KEYS[8]) == 0) then
  return {-1, kind, pttl}
end
local tokens = {}
if kind == 'string' then
  tokens[1] = redis.call('GET', KEYS[1])
else
  local m = redis.call('ZRANGE', KEYS[1], 0, -1, 'WITHSCORES')
  for i = 1, #m, 2 do
    -- a lease that ran out is gone already, whoever holds it
    if tonumber(m[i + 1]) > now then tokens[#tokens + 1] = m[i] end
  end
end
local out = {#tokens > 0 and 1 or 0, kind, pttl}
for _, token in ipairs(tokens) do
  local info = info_of(token, kind, KEYS[11], KEYS[7]) or ''
  local slot = redis.call('HGET', KEYS[9], token)
  if slot and redis.call('GET', KEYS[9] .. ':' .. slot) == token then
    redis.call('DEL', KEYS[9] .. ':' .. slot)
  end
  redis.call('LPUSH', KEYS[10] .. ':' .. token, ARGV[3])
  redis.call('PEXPIRE', KEYS[10] .. ':' .. token, 60000)
  if ARGV[1] ~= '0' then
    local who, f = split(info)
    redis.call('XADD', KEYS[3], 'MAXLEN', '~', ARGV[1], '*', 'event', 'broken',
      'token', token, 'holder', who, 'fence', f, 'by', ARGV[2])
    redis.call('PEXPIRE', KEYS[3], 604800000)
  end
  out[#out + 1] = token
  out[#out + 1] = info
end
redis.call('DEL', KEYS[1], KEYS[8], KEYS[9], KEYS[7])
wake(KEYS[4], KEYS[5], KEYS[2], KEYS[6], now)
return out

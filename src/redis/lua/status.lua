-- KEYS: 1 lock, 2 fencing counter (and an exclusive holder's info: see
-- lib/holder.lua), 3 holder info (shared, --limit), 4 mode of a shared lock,
-- 5 fair queue (KEYS[5]..':info': its waiters' info), 6 waiters,
-- 7 --limit slots, 8 exclusive waiters. No ARGV. Reads only.
-- dlock status, one round trip: returns {server ms, type, pttl, fencing
-- counter (digits) or nil, mode or nil, {token, ms left, info or nil, slot or nil,
-- ...} of each live holder (a string's value is its holder's token),
-- {token, ticket, info or nil, ...} of each live --fair waiter in queue
-- order, live waiters, live exclusive waiters}.
-- numkeys: 8

-- include: lib/holder.lua
local t = redis.call('TIME')
local now = t[1] * 1000 + math.floor(t[2] / 1000)
local kind = redis.call('TYPE', KEYS[1]).ok
local pttl = redis.call('PTTL', KEYS[1])
local holders, waiters = {}, {}
local function add(token, left)
  holders[#holders + 1] = token
  holders[#holders + 1] = left
  holders[#holders + 1] = info_of(token, kind, KEYS[2], KEYS[3])
  holders[#holders + 1] = redis.call('HGET', KEYS[7], token)
end
if kind == 'string' then
  add(redis.call('GET', KEYS[1]), pttl)
elseif kind == 'zset' then
  local m = redis.call('ZRANGE', KEYS[1], 0, -1, 'WITHSCORES')
  for i = 1, #m, 2 do
    local left = math.floor(tonumber(m[i + 1]) - now)
    if left > 0 then add(m[i], left) end
  end
end
local q = redis.call('ZRANGE', KEYS[5], 0, -1, 'WITHSCORES')
for i = 1, #q, 2 do
  local alive = redis.call('ZSCORE', KEYS[6], q[i])
  if alive and tonumber(alive) > now then
    waiters[#waiters + 1] = q[i]
    waiters[#waiters + 1] = q[i + 1]
    waiters[#waiters + 1] = redis.call('HGET', KEYS[5] .. ':info', q[i])
  end
end
local function get(key)
  return redis.call('TYPE', key).ok == 'string' and redis.call('GET', key)
end
local fence = get(KEYS[2])
fence = fence and string.format('%d', counter(fence))
return {now, kind, pttl, fence, get(KEYS[4]), holders, waiters,
  redis.call('ZCOUNT', KEYS[6], '(' .. now, '+inf'),
  redis.call('ZCOUNT', KEYS[8], '(' .. now, '+inf')}

-- KEYS: 1 lock (string: exclusive holder's token; zset: shared holders,
-- token -> lease end in server ms), 2 fencing counter (and the exclusive
-- holder's info: lib/holder.lua), 3 the history (stream, see
-- release.lua), 4 holder info of shared and --limit holders (hash: token
-- -> info), 5 mode of a shared lock ("s" or the --limit N), 6 fair queue
-- (zset: token -> ticket), 7 waiters (zset: token -> server ms after
-- which the waiter counts as gone; every refusal of a caller that will
-- wait refreshes its entry), 8 the --limit slots (hash: token -> slot;
-- each slot KEYS[8]..':'..i a string holding its token, PX ttl), 9 the
-- wake list (waiters BLPOP it; a fair or exclusive waiter its own,
-- KEYS[9]..':'..token), 10 the exclusive waiters (zset: token -> server
-- ms after which it counts as gone).
-- ARGV: 1 token, 2 ttl ms, 3 holder info ("host\tpid\tuser\tsince_ms\t
-- command"; kept with "\tfence" added, and KEYS[6]..':info' keeps a
-- --fair waiter's), 4 the number of events the history keeps ('0':
-- none, and no XADD; approximately: XADD MAXLEN ~ trims whole stream
-- nodes, dlock history shows the last N), 5 the fencing clock's grain,
-- microseconds (lib/fence.lua): '1' on a single server, more with
-- RedLock, 6 mode ("x" exclusive, "s" shared, or N for --limit N), 7 fair
-- ticket or '', 8 re-entry token or '', 9 waiter liveness ms (the caller
-- counts as gone that long after this try unless it tries again), 10 the
-- --limit slot to take, or '' for the lowest free one, 11 '1' when the
-- caller will wait if refused, '2' when it will and was refused before
-- (so may be among the waiters), '' when it will not.
-- The short call: KEYS 1-3 and ARGV 1-5 only, for a first try that is
-- exclusive, not --fair, re-enters nothing, and has not been refused:
-- the common case, where fewer arguments cost the server less. It takes
-- a free lock as the full call does; otherwise it returns {3}: ask again
-- with every key and argument.
-- A --limit holder takes one of N slots, each an exclusive lock of its own:
-- with several servers a holder needs a majority on one slot, so no more
-- than N can hold (counting holders per server would let majorities that
-- overlap on no slot admit more than N).
-- An error "DLOCKVERSION ..." on a server older than Redis 6.0.
-- Returns {1, fence[, slot taken or -1]} acquired, {2, fence} re-entered
-- (the fence of the re-entered holder, as its info keeps it),
-- or {0, retry hint ms, queue position, holder info[, free slot or -1]}
-- when held ({3}: the short call, see above). The retry hint (-1: none)
-- is when the refusal may no longer hold: the holder's lease ends, or a
-- waiter the caller waits behind (the head of the --fair queue, a writer)
-- lapses, should it have died. The
-- first lines are the common case, an exclusive lock that is free, kept
-- short: no waiter entry to drop unless the caller was refused before.
-- A shared or fair holder wakes the next waiter, who may hold alongside it
-- or is the new head of the queue.
-- Writers first, as read-write locks do: an exclusive request refused
-- while the lock is held marks itself in KEYS[10] (if it will wait), and a
-- shared or --limit request waits while a live mark is there, so that a
-- stream of readers cannot keep a writer out for ever. The mark goes when
-- the writer acquires or leaves, or lapses as KEYS[7]'s entries do.
-- A waiter's try drops the waiters that lapsed from KEYS[7], KEYS[6] and
-- KEYS[10].
-- numkeys: 10

-- Redis 6.0 added redis.setresp, and the ACL users dlock can AUTH as.
if not redis.setresp then
  return redis.error_reply('DLOCKVERSION Redis 6.0 or later is needed')
end
-- include: lib/fence.lua
local grain = tonumber(ARGV[5])
local short = #KEYS == 3
if (short or ARGV[6] == 'x' and ARGV[7] == '') and
    redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then
  local n, f = next_fence(KEYS[2], grain, ARGV[1], ARGV[3])
  -- A caller refused before leaves the waiters (only a waiter has a
  -- writer mark: both go together, the mark lapses no later).
  if ARGV[11] == '2' and redis.call('ZREM', KEYS[7], ARGV[1]) == 1 then
    redis.call('ZREM', KEYS[10], ARGV[1])
  end
  if ARGV[4] ~= '0' then	-- record(f), below, written out
    redis.call('XADD', KEYS[3], 'MAXLEN', '~', ARGV[4], '*', 'event', 'acquired',
      'token', ARGV[1], 'holder', ARGV[3], 'fence', f)
    redis.call('PEXPIRE', KEYS[3], 604800000)
  end
  return {1, n}
end
if short then return {3} end
-- Not the common case: the helpers are made only now, as making each
-- costs a little in every call.
-- include: lib/holder.lua
-- The history: an 'acquired' event, as the release script writes
-- its own; the stream goes a week after its last acquisition.
local function record(f)
  if ARGV[4] == '0' then return end
  redis.call('XADD', KEYS[3], 'MAXLEN', '~', ARGV[4], '*', 'event', 'acquired',
    'token', ARGV[1], 'holder', ARGV[3], 'fence', f)
  redis.call('PEXPIRE', KEYS[3], 604800000)
end
local t = redis.call('TIME')
local now = t[1] * 1000 + math.floor(t[2] / 1000)
local function stretch(now)
  local last = redis.call('ZRANGE', KEYS[1], -1, -1, 'WITHSCORES')
  if #last == 0 then
    redis.call('DEL', KEYS[1], KEYS[5], KEYS[8])
    return
  end
  local left = math.max(1, tonumber(last[2]) - now)
  redis.call('PEXPIRE', KEYS[1], left)
  redis.call('PEXPIRE', KEYS[5], left)
  redis.call('PEXPIRE', KEYS[8], left)
  if redis.call('PTTL', KEYS[4]) < left then
    redis.call('PEXPIRE', KEYS[4], left)
  end
end
local function drop_dead(now)
  if redis.call('TYPE', KEYS[1]).ok ~= 'zset' then return end
  local dead = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', now)
  if #dead > 0 then
    redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
    redis.call('HDEL', KEYS[4], unpack(dead))
    redis.call('HDEL', KEYS[8], unpack(dead))
    stretch(now)
  end
end
-- include: lib/wake.lua
local token, mode, ticket = ARGV[1], ARGV[6], ARGV[7]
local kind = redis.call('TYPE', KEYS[1]).ok
-- Re-entry, unless --min-hold keeps the lock after its job (the holder
-- info then ends in the release's time): nothing renews it any more.
-- The nested command gets the fence the outer holder's info keeps: the
-- one handed out to it (the counter may have gone on with other shared
-- holders), never 0 or what the caller's environment says.
local reenter = ARGV[8] ~= ''
local held_info = reenter and info_of(ARGV[8], kind, KEYS[2], KEYS[4])
if finished(held_info) then reenter = false end
local function held_fence()
  local _, f = split(held_info or '')
  return tonumber(f) or counter(redis.call('GET', KEYS[2]))
end
if reenter then
  if kind == 'string' and redis.call('GET', KEYS[1]) == ARGV[8] then
    return {2, held_fence()}
  end
  if kind == 'zset' then
    local s = redis.call('ZSCORE', KEYS[1], ARGV[8])
    if s and tonumber(s) > now then
      -- Held shared (or with --limit) by the outer dlock: an exclusive
      -- request would not exclude the other holders, and waiting for
      -- them would wait for the outer job itself. No upgrade; another
      -- mode is refused as it would be without re-entry.
      local had = redis.call('GET', KEYS[5]) or 's'
      local held = had == 's' and 'shared' or 'with --limit ' .. had
      if mode == 'x' then
        return redis.error_reply('DLOCKMODE the outer dlock holds the lock ' ..
          held .. ': a nested exclusive request cannot re-enter it')
      end
      if had ~= mode then
        return redis.error_reply('DLOCKMODE the lock is held ' .. held)
      end
      return {2, held_fence()}
    end
  end
end
drop_dead(now)
kind = redis.call('TYPE', KEYS[1]).ok
if kind ~= 'none' and kind ~= 'string' and kind ~= 'zset' then
  return redis.error_reply('WRONGTYPE ' .. KEYS[1] .. ' is a ' .. kind .. ', not a lock')
end
-- The holder info as the wait line reads it: without the fence.
local function holder()
  local who
  if kind == 'string' then
    who = info_of(redis.call('GET', KEYS[1]), kind, KEYS[2], KEYS[4])
  elseif kind == 'zset' then
    local first = redis.call('ZRANGE', KEYS[1], 0, 0)
    if #first > 0 then who = redis.call('HGET', KEYS[4], first[1]) end
  end
  if who then who = split(who) end
  if kind == 'zset' then
    local n = redis.call('ZCARD', KEYS[1])
    if n > 1 then return (who or 'foreign') .. ' +' .. (n - 1) end
  end
  return who or ''
end
-- Waiters that stopped trying are gone: out of the waiters, the queue
-- and the writers (a thousand at a time: unpack's limit).
if ARGV[11] ~= '' or ticket ~= '' then
  local gone = redis.call('ZRANGEBYSCORE', KEYS[7], '-inf', now, 'LIMIT', 0, 1000)
  if #gone > 0 then
    redis.call('ZREM', KEYS[7], unpack(gone))
    redis.call('ZREM', KEYS[6], unpack(gone))
    redis.call('HDEL', KEYS[6] .. ':info', unpack(gone))
  end
  redis.call('ZREMRANGEBYSCORE', KEYS[10], '-inf', now)
end
-- The sooner of two retry hints, ms from now (-1: none).
local function sooner(a, b)
  if a < 0 or (b >= 0 and b < a) then return b end
  return a
end
local pos, taken = 0, -1
local function refuse(hint, free, writer)
  if ARGV[11] ~= '' then
    local until_ms = now + tonumber(ARGV[9])
    redis.call('ZADD', KEYS[7], until_ms, token)
    redis.call('PEXPIRE', KEYS[7], ARGV[9])
    if writer then
      redis.call('ZADD', KEYS[10], until_ms, token)
      redis.call('PEXPIRE', KEYS[10], ARGV[9])
    end
  end
  return {0, hint, pos, holder(), free}
end
if ticket ~= '' then
  redis.call('ZADD', KEYS[6], 'NX', ticket, token)
  -- who waits, since when: for dlock status
  redis.call('HSETNX', KEYS[6] .. ':info', token, ARGV[3])
  redis.call('ZADD', KEYS[7], now + tonumber(ARGV[9]), token)
  redis.call('PEXPIRE', KEYS[6], ARGV[9])
  redis.call('PEXPIRE', KEYS[6] .. ':info', ARGV[9])
  redis.call('PEXPIRE', KEYS[7], ARGV[9])
  pos = redis.call('ZRANK', KEYS[6], token)
  if pos > 0 then
    local hint = kind == 'none' and -1 or redis.call('PTTL', KEYS[1])
    -- and when the head would lapse, should it have died
    local head = redis.call('ZRANGE', KEYS[6], 0, 0)
    local lapse = redis.call('ZSCORE', KEYS[7], head[1])
    if lapse then hint = sooner(hint, tonumber(lapse) - now) end
    return refuse(hint)
  end
end
local n, f
local late = false
if mode == 'x' then
  if kind == 'string' and redis.call('GET', KEYS[1]) == token then
    -- Ours already: an earlier try of this wait (one token for the whole
    -- wait) that timed out on the caller's side but was carried out (the
    -- server paused, a slow network). Refused, the caller would wait for
    -- itself until its own lease lapsed. Its lease starts again now; its
    -- fence stands if the counter still names it (the 'acquired' event
    -- was written then), else a new one is handed out.
    redis.call('PEXPIRE', KEYS[1], ARGV[2])
    local v = redis.call('GET', KEYS[2])
    if info_in(v, token) then
      n, late = counter(v), true
      f = string.format('%d', n)
    else
      n, f = next_fence(KEYS[2], grain, token, ARGV[3])
    end
  elseif kind ~= 'none' then
    return refuse(redis.call('PTTL', KEYS[1]), nil, true)
  else
    redis.call('SET', KEYS[1], token, 'PX', ARGV[2])
    n, f = next_fence(KEYS[2], grain, token, ARGV[3])
  end
else
  if kind == 'string' then return refuse(redis.call('PTTL', KEYS[1])) end
  local had = redis.call('GET', KEYS[5])
  if kind == 'zset' and had and had ~= mode then
    return redis.error_reply('DLOCKMODE the lock is held ' ..
      (had == 's' and 'shared' or 'with --limit ' .. had))
  end
  -- Writers first: behind a live exclusive waiter, whose wake-up
  -- comes first, and then wakes the readers; or, should it have
  -- died, until it lapses.
  local writer = redis.call('ZRANGEBYSCORE', KEYS[10], '(' .. now, '+inf',
    'LIMIT', 0, 1, 'WITHSCORES')
  if #writer > 0 then return refuse(tonumber(writer[2]) - now) end
  if mode ~= 's' then
    local limit = tonumber(mode)
    -- Each holder here has one slot here: scan only when one is free.
    local function free_slot()
      if kind == 'zset' and redis.call('ZCARD', KEYS[1]) >= limit then
        return -1
      end
      for i = 0, limit - 1 do
        if redis.call('EXISTS', KEYS[8] .. ':' .. i) == 0 then return i end
      end
      return -1
    end
    local slot = tonumber(ARGV[10]) or free_slot()
    if slot < 0 or slot >= limit or not redis.call('SET',
        KEYS[8] .. ':' .. slot, token, 'NX', 'PX', ARGV[2]) then
      local first = redis.call('ZRANGE', KEYS[1], 0, 0, 'WITHSCORES')
      local hint = #first > 0 and math.max(0, tonumber(first[2]) - now) or -1
      return refuse(hint, free_slot())
    end
    redis.call('HSET', KEYS[8], token, slot)
    taken = slot
  end
  n, f = next_fence(KEYS[2], grain)
  redis.call('ZADD', KEYS[1], now + tonumber(ARGV[2]), token)
  redis.call('SET', KEYS[5], mode)
  redis.call('HSET', KEYS[4], token, ARGV[3] .. '\t' .. f)
  stretch(now)
end
redis.call('ZREM', KEYS[7], token)
if mode == 'x' then redis.call('ZREM', KEYS[10], token) end
if ticket ~= '' then
  redis.call('ZREM', KEYS[6], token)
  redis.call('HDEL', KEYS[6] .. ':info', token)
  redis.call('DEL', KEYS[9] .. ':' .. token)
end
if ticket ~= '' or mode ~= 'x' then wake(KEYS[6], KEYS[9], KEYS[7]) end
if not late then record(f) end
return {1, n, taken}

-- KEYS: 1 lock, 2 waiters, 3 the history, 4 fair queue, 5 wake list,
-- 6 exclusive waiters, 7 holder info (shared, --limit), 8 mode of a shared
-- lock, 9 --limit slots, 10 the notices to holders (a list
-- KEYS[10]..':'..token each), 11 the fencing counter (and an exclusive
-- holder's info: lib/holder.lua).
-- ARGV: 1 token, 2 events the history keeps ('0': none), 3 who releases:
-- 'job' (the holder, its job over), 'undo' (an acquisition no command
-- used: a minority's grant, a lease too short to start), 'token' (dlock
-- release --token, maybe from elsewhere), 4 the job's exit status or '',
-- 5 how long it held, ms, or '', 6 its fence, 7 the caller's holder info,
-- 8 ('token') what the holder is told, 9 ('job') ms left of --min-hold,
-- or '', 10 ('job', with 9) when the job finished, the holder's ms.
-- Compare-and-delete, as redis-py, redsync and node-redlock release, then
-- one waiter is woken at once (not all: one of them could win), a writer
-- first. Our holder info goes even when the lock is no longer ours (an
-- exclusive holder's stays beside the counter, stale once the lock is
-- not its own).
-- --min-hold: a lock still ours is kept instead, its lease (and slot)
-- shortened to ARGV[9] ms, never lengthened; its holder info stays, with
-- "\tfinished" added, and nobody is woken: a waiter would find it taken,
-- and each refusal tells waiters when the lease ends.
-- The history (a stream of about ARGV[2] events, trimmed by whole nodes,
-- gone a week after the last acquisition): 'job' writes "released" with
-- the exit status and hold time, or
-- "lost" when the lock was no longer ours; 'undo' deletes the acquisition's
-- own "acquired" event; 'token' writes "released" naming the holder, the
-- hold time from its info's since (server clock less holder's: roughly),
-- and who released ("by"), unless --min-hold kept the lock after its job,
-- whose "released" is there already.
-- The short call: KEYS 1-6 and ARGV 1-7 only, for an exclusive holder
-- whose job ended (no --min-hold) on a single server: fewer arguments
-- cost the server less. It releases as the full call does when the lock
-- is ours; otherwise (lost, or a shared lock) it returns 3: ask again
-- with every key and argument.
-- Returns 1 when released, 0 when the lock was not ours.
-- numkeys: 11

-- An event at the end of the history. The acquisition set the stream's
-- week: one not there any more (lapsed in a job of a week, deleted) is
-- not made again without one. Redis 6.0 and 6.1 lack NOMKSTREAM.
local function record(...)
  local r = redis.pcall('XADD', KEYS[3], 'NOMKSTREAM', 'MAXLEN', '~', ARGV[2], '*', ...)
  if type(r) == 'table' and r.err then
    redis.call('XADD', KEYS[3], 'MAXLEN', '~', ARGV[2], '*', ...)
    redis.call('PEXPIRE', KEYS[3], 604800000)
  end
end
-- The common case first, in the fewest calls: an exclusive holder's
-- job ended, no --min-hold. A string that holds our token has no
-- --limit slot, and its holder info stays beside the counter; TIME only
-- when someone waits. (GET fails on a sorted set, a shared lock: the
-- general case below then.) The other helpers are made only after it,
-- as making each costs a little in every call.
local short = #KEYS == 6
local fast = ARGV[3] == 'job' and (ARGV[9] or '') == '' and
  redis.pcall('GET', KEYS[1]) == ARGV[1]
local waiting
if fast then
  redis.call('DEL', KEYS[1])
  waiting = redis.call('ZCARD', KEYS[2]) > 0
  if ARGV[2] ~= '0' then
    record('event', 'released', 'token', ARGV[1], 'holder', ARGV[7],
      'fence', ARGV[6], 'exit', ARGV[4], 'held_ms', ARGV[5])
  end
  if not waiting then return 1 end
elseif short then
  return 3
end
-- include: lib/wake.lua
local function clock()
  local t = redis.call('TIME')
  return t[1] * 1000 + math.floor(t[2] / 1000)
end
if fast then
  wake(KEYS[4], KEYS[5], KEYS[2], KEYS[6], clock())
  return 1
end
local now = clock()
-- include: lib/holder.lua
local token, how = ARGV[1], ARGV[3]
local kind = redis.call('TYPE', KEYS[1]).ok
local info = how == 'token' and info_of(token, kind, KEYS[11], KEYS[7])
-- A lock --min-hold kept after its job: the job's 'released' event is
-- there, and no dlock listens for a notice any more.
local done = finished(info)
local slot = redis.call('HGET', KEYS[9], token)
-- --min-hold: the ms left of the minimum, when the job ended sooner
local hold = how == 'job' and tonumber(ARGV[9] or '')
local ours, kept = true, false
local ends = hold and kind == 'zset' and redis.call('ZSCORE', KEYS[1], token)
if kind == 'string' and redis.call('GET', KEYS[1]) == token then
  if hold then
    kept = true
    if hold < redis.call('PTTL', KEYS[1]) then
      redis.call('PEXPIRE', KEYS[1], hold)
    end
  else
    redis.call('DEL', KEYS[1])
  end
elseif ends and tonumber(ends) > now then
  kept = true
  ends = math.min(tonumber(ends), now + hold)
  redis.call('ZADD', KEYS[1], 'XX', ends, token)
  if slot and redis.call('GET', KEYS[9] .. ':' .. slot) == token then
    redis.call('PEXPIRE', KEYS[9] .. ':' .. slot, math.max(1, ends - now))
  end
  -- as the extend script: every key of the lock goes with the last lease
  local last = redis.call('ZRANGE', KEYS[1], -1, -1, 'WITHSCORES')
  local left = math.max(1, tonumber(last[2]) - now)
  for _, k in ipairs({1, 7, 8, 9}) do redis.call('PEXPIRE', KEYS[k], left) end
elseif kind == 'zset' and redis.call('ZREM', KEYS[1], token) == 1 then
  local last = redis.call('ZRANGE', KEYS[1], -1, -1, 'WITHSCORES')
  if #last == 0 then
    redis.call('DEL', KEYS[1], KEYS[8])
  else
    local left = math.max(1, tonumber(last[2]) - now)
    redis.call('PEXPIRE', KEYS[1], left)
    redis.call('PEXPIRE', KEYS[8], left)
  end
else
  ours = false
end
if slot and not kept then
  if redis.call('GET', KEYS[9] .. ':' .. slot) == token then
    redis.call('DEL', KEYS[9] .. ':' .. slot)
  end
  redis.call('HDEL', KEYS[9], token)
end
-- Not ours: was it, here? Its holder info tells, while the lease lasts
-- (an exclusive holder's, until the next acquisition).
local owned = ours or redis.call('HEXISTS', KEYS[7], token) == 1 or
  info_in(redis.call('GET', KEYS[11]), token) ~= nil
if kept then
  -- dlock status: held, command finished
  local v = kind == 'string' and redis.call('GET', KEYS[11])
  if info_in(v, token) then
    redis.call('SET', KEYS[11], v .. '\t' .. ARGV[10], 'KEEPTTL')
  else
    local mine = redis.call('HGET', KEYS[7], token)
    if mine then redis.call('HSET', KEYS[7], token, mine .. '\t' .. ARGV[10]) end
  end
else
  redis.call('HDEL', KEYS[7], token)
end
if ours and not kept then wake(KEYS[4], KEYS[5], KEYS[2], KEYS[6], now) end
-- A lease that lapsed or was broken here: the stream tells, as long as
-- it keeps the acquisition (a server that never granted it has no event).
local function acquired_here()
  for _, e in ipairs(redis.call('XREVRANGE', KEYS[3], '+', '-', 'COUNT', 1000)) do
    if e[2][2] == 'acquired' and e[2][4] == token then return true end
  end
  return false
end
if ARGV[2] == '0' then
  -- no history
elseif how == 'job' and (owned or acquired_here()) then
  record('event', ours and 'released' or 'lost', 'token', token,
    'holder', ARGV[7], 'fence', ARGV[6], 'exit', ARGV[4], 'held_ms', ARGV[5])
elseif how == 'undo' and ours then
  for _, e in ipairs(redis.call('XREVRANGE', KEYS[3], '+', '-', 'COUNT', 8)) do
    if e[2][2] == 'acquired' and e[2][4] == token then
      redis.call('XDEL', KEYS[3], e[1])
      break
    end
  end
elseif how == 'token' and ours and not done then
  local who, f = split(info or '')
  local since = tonumber(who:match('^[^\t]*\t[^\t]*\t[^\t]*\t([^\t]*)'))
  record('event', 'released', 'token', token, 'holder', who, 'fence', f,
    'exit', '', 'held_ms', since and string.format('%d', math.max(0, now - since)) or '',
    'by', ARGV[7])
end
-- A dlock running a job under that token is told at once, not at its
-- next renewal: it BLPOPs this list.
if how == 'token' and ours and not done then
  redis.call('LPUSH', KEYS[10] .. ':' .. token, ARGV[8])
  redis.call('PEXPIRE', KEYS[10] .. ':' .. token, 60000)
end
if ours then return 1 end
return 0

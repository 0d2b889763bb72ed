/* scripts.c - the Lua scripts, each headed by its KEYS and ARGV.
 * The SHA-1 beside each body must match it (EVALSHA falls back to EVAL
 * when it does not, at one more round trip): tests/fence.bats checks them;
 * recompute with printf %s BODY | sha1sum. */
#include "scripts.h"

/* KEYS: 1 lock (string: exclusive holder's token; zset: shared holders,
 * token -> lease end in server ms), 2 fencing counter, 3 holder info (hash:
 * token -> "host pid user since command"), 4 mode of a shared lock ("s" or
 * the --limit N), 5 fair queue (zset: token -> ticket), 6 waiters (zset:
 * token -> server ms after which the waiter counts as gone; every refusal
 * of a caller that will wait refreshes its entry), 7 the
 * --limit slots (hash: token -> slot; each slot KEYS[7]..':'..i a string
 * holding its token, PX ttl), 8 the wake list (waiters BLPOP it; a fair
 * or exclusive waiter its own, KEYS[8]..':'..token), 9 the exclusive
 * waiters (zset: token -> server ms after which it counts as gone),
 * 10 the history (stream, see script_release).
 * ARGV: 1 token, 2 ttl ms, 3 re-entry token or '', 4 holder info
 * ("host\tpid\tuser\tsince_ms\tcommand"; KEYS[3] keeps it with
 * "\tfence" added, and KEYS[5]..':info' keeps a --fair waiter's),
 * 5 mode ("x" exclusive, "s" shared, or N for --limit N), 6 fair ticket or '',
 * 7 waiter liveness ms (the caller counts as gone that long after this try
 * unless it tries again), 8 the --limit slot to take, or '' for the lowest
 * free one, 9 '1' when the caller will wait if refused, 10 the number of
 * events the history keeps ('0': none, and no XADD).
 * A --limit holder takes one of N slots, each an exclusive lock of its own:
 * with several servers a holder needs a majority on one slot, so no more
 * than N can hold (counting holders per server would let majorities that
 * overlap on no slot admit more than N).
 * An error "DLOCKVERSION ..." on a server older than Redis 6.0.
 * Returns {1, fence[, slot taken or -1]} acquired, {2, fence} re-entered,
 * or {0, retry hint ms, queue position, holder info[, free slot or -1]}
 * when held. The retry hint (-1: none) is when the refusal may no longer
 * hold: the holder's lease ends, or a waiter the caller waits behind (the
 * head of the --fair queue, a writer) lapses, should it have died. The
 * first lines are the common case, an exclusive lock that is free, kept
 * short: they call TIME only when the fencing counter is missing (XADD's
 * '*' ID reads the clock without a command).
 * A shared or fair holder wakes the next waiter, who may hold alongside it
 * or is the new head of the queue.
 * Writers first, as read-write locks do: an exclusive request refused
 * while the lock is held marks itself in KEYS[9] (if it will wait), and a
 * shared or --limit request waits while a live mark is there, so that a
 * stream of readers cannot keep a writer out for ever. The mark goes when
 * the writer acquires or leaves, or lapses as KEYS[6]'s entries do.
 * A waiter's try drops the waiters that lapsed from KEYS[6], KEYS[5] and
 * KEYS[9]. */
const struct script script_acquire = {
	.name = "acquire",
	.body =
		"-- Redis 6.0 added redis.setresp, and the ACL users dlock can AUTH as.\n"
		"if not redis.setresp then\n"
		"  return redis.error_reply('DLOCKVERSION Redis 6.0 or later is needed')\n"
		"end\n"
		"-- The fence. A counter that is missing (a restart without\n"
		"-- persistence, an eviction) starts again from the server's clock\n"
		"-- in microseconds: above every fence handed out before, as long as\n"
		"-- the clock did not go back and acquisitions came less than once a\n"
		"-- microsecond. Below 2^53 for centuries: exact as a Lua number.\n"
		"-- So the counter may go a day after the lock was last taken, as a\n"
		"-- lock named per build would otherwise leave one for ever.\n"
		"local function next_fence()\n"
		"  local f = redis.call('INCR', KEYS[2])\n"
		"  if f == 1 then\n"
		"    local t = redis.call('TIME')\n"
		"    redis.call('SET', KEYS[2], t[1] .. string.rep('0', 6 - #t[2]) .. t[2])\n"
		"    f = redis.call('INCR', KEYS[2])\n"
		"  end\n"
		"  redis.call('PEXPIRE', KEYS[2], 86400000)\n"
		"  return f\n"
		"end\n"
		"-- The history: an 'acquired' event, as the release script writes\n"
		"-- its own; the stream goes a week after its last event.\n"
		"local function record(f)\n"
		"  if ARGV[10] == '0' then return end\n"
		"  redis.call('XADD', KEYS[10], 'MAXLEN', ARGV[10], '*', 'event', 'acquired',\n"
		"    'token', ARGV[1], 'holder', ARGV[4], 'fence', f)\n"
		"  redis.call('PEXPIRE', KEYS[10], 604800000)\n"
		"end\n"
		"-- A fence as digits: Lua would print a 16-digit number as 1.7e+15.\n"
		"local function digits(n) return string.format('%d', n) end\n"
		"if ARGV[5] == 'x' and ARGV[6] == '' and\n"
		"    redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then\n"
		"  local n = next_fence()\n"
		"  local f = digits(n)\n"
		"  redis.call('HSET', KEYS[3], ARGV[1], ARGV[4] .. '\\t' .. f)\n"
		"  redis.call('PEXPIRE', KEYS[3], ARGV[2])\n"
		"  -- A caller refused before leaves the waiters (only a waiter has a\n"
		"  -- writer mark: both go together, the mark lapses no later).\n"
		"  if redis.call('ZREM', KEYS[6], ARGV[1]) == 1 then\n"
		"    redis.call('ZREM', KEYS[9], ARGV[1])\n"
		"  end\n"
		"  record(f)\n"
		"  return {1, n}\n"
		"end\n"
		"local t = redis.call('TIME')\n"
		"local now = t[1] * 1000 + math.floor(t[2] / 1000)\n"
		"local function stretch(now)\n"
		"  local last = redis.call('ZRANGE', KEYS[1], -1, -1, 'WITHSCORES')\n"
		"  if #last == 0 then\n"
		"    redis.call('DEL', KEYS[1], KEYS[4], KEYS[7])\n"
		"    return\n"
		"  end\n"
		"  local left = math.max(1, tonumber(last[2]) - now)\n"
		"  redis.call('PEXPIRE', KEYS[1], left)\n"
		"  redis.call('PEXPIRE', KEYS[4], left)\n"
		"  redis.call('PEXPIRE', KEYS[7], left)\n"
		"  if redis.call('PTTL', KEYS[3]) < left then\n"
		"    redis.call('PEXPIRE', KEYS[3], left)\n"
		"  end\n"
		"end\n"
		"local function drop_dead(now)\n"
		"  if redis.call('TYPE', KEYS[1]).ok ~= 'zset' then return end\n"
		"  local dead = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', now)\n"
		"  if #dead > 0 then\n"
		"    redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)\n"
		"    redis.call('HDEL', KEYS[3], unpack(dead))\n"
		"    redis.call('HDEL', KEYS[7], unpack(dead))\n"
		"    stretch(now)\n"
		"  end\n"
		"end\n"
		"-- Wakes one waiter, if anyone waits (every waiter is in waiters): a\n"
		"-- live exclusive waiter (writers first) when writers is given, else\n"
		"-- the head of the fair queue, each on its own list; else whoever has\n"
		"-- waited longest on the common one (BLPOP serves in order). An\n"
		"-- element nobody takes goes after 2 s: it is for a waiter between\n"
		"-- its refusal and its BLPOP.\n"
		"local function wake(queue, list, waiters, writers, now)\n"
		"  if redis.call('ZCARD', waiters) == 0 then return end\n"
		"  local head = writers and redis.call('ZRANGEBYSCORE', writers,\n"
		"    '(' .. now, '+inf', 'LIMIT', 0, 1) or {}\n"
		"  if #head == 0 then head = redis.call('ZRANGE', queue, 0, 0) end\n"
		"  if #head > 0 then list = list .. ':' .. head[1] end\n"
		"  redis.call('LPUSH', list, '1')\n"
		"  redis.call('LTRIM', list, 0, 0)\n"
		"  redis.call('PEXPIRE', list, 2000)\n"
		"end\n"
		"local token, mode, ticket = ARGV[1], ARGV[5], ARGV[6]\n"
		"local function fence() return tonumber(redis.call('GET', KEYS[2]) or '0') end\n"
		"local kind = redis.call('TYPE', KEYS[1]).ok\n"
		"-- Re-entry, unless --min-hold keeps the lock after its job (the holder\n"
		"-- info then ends in the release's time): nothing renews it any more.\n"
		"local reenter = ARGV[3] ~= ''\n"
		"if reenter then\n"
		"  local i = redis.call('HGET', KEYS[3], ARGV[3])\n"
		"  if i and i:match('^' .. string.rep('[^\\t]*\\t', 6) .. '[0-9]+$') then\n"
		"    reenter = false\n"
		"  end\n"
		"end\n"
		"if reenter then\n"
		"  if kind == 'string' and redis.call('GET', KEYS[1]) == ARGV[3] then\n"
		"    return {2, fence()}\n"
		"  end\n"
		"  if kind == 'zset' then\n"
		"    local s = redis.call('ZSCORE', KEYS[1], ARGV[3])\n"
		"    if s and tonumber(s) > now then return {2, fence()} end\n"
		"  end\n"
		"end\n"
		"drop_dead(now)\n"
		"kind = redis.call('TYPE', KEYS[1]).ok\n"
		"if kind ~= 'none' and kind ~= 'string' and kind ~= 'zset' then\n"
		"  return redis.error_reply('WRONGTYPE ' .. KEYS[1] .. ' is a ' .. kind .. ', not a lock')\n"
		"end\n"
		"-- The holder info as the wait line reads it: without the fence.\n"
		"local function holder()\n"
		"  local who\n"
		"  if kind == 'string' then\n"
		"    who = redis.call('HGET', KEYS[3], redis.call('GET', KEYS[1]))\n"
		"  elseif kind == 'zset' then\n"
		"    local first = redis.call('ZRANGE', KEYS[1], 0, 0)\n"
		"    if #first > 0 then who = redis.call('HGET', KEYS[3], first[1]) end\n"
		"  end\n"
		"  if who then\n"
		"    who = who:match('^(' .. string.rep('[^\\t]*\\t', 4) .. '[^\\t]*)\\t') or who\n"
		"  end\n"
		"  if kind == 'zset' then\n"
		"    local n = redis.call('ZCARD', KEYS[1])\n"
		"    if n > 1 then return (who or 'foreign') .. ' +' .. (n - 1) end\n"
		"  end\n"
		"  return who or ''\n"
		"end\n"
		"-- Waiters that stopped trying are gone: out of the waiters, the queue\n"
		"-- and the writers (a thousand at a time: unpack's limit).\n"
		"if ARGV[9] == '1' or ticket ~= '' then\n"
		"  local gone = redis.call('ZRANGEBYSCORE', KEYS[6], '-inf', now, 'LIMIT', 0, 1000)\n"
		"  if #gone > 0 then\n"
		"    redis.call('ZREM', KEYS[6], unpack(gone))\n"
		"    redis.call('ZREM', KEYS[5], unpack(gone))\n"
		"    redis.call('HDEL', KEYS[5] .. ':info', unpack(gone))\n"
		"  end\n"
		"  redis.call('ZREMRANGEBYSCORE', KEYS[9], '-inf', now)\n"
		"end\n"
		"-- The sooner of two retry hints, ms from now (-1: none).\n"
		"local function sooner(a, b)\n"
		"  if a < 0 or (b >= 0 and b < a) then return b end\n"
		"  return a\n"
		"end\n"
		"local pos, taken = 0, -1\n"
		"local function refuse(hint, free, writer)\n"
		"  if ARGV[9] == '1' then\n"
		"    local until_ms = now + tonumber(ARGV[7])\n"
		"    redis.call('ZADD', KEYS[6], until_ms, token)\n"
		"    redis.call('PEXPIRE', KEYS[6], ARGV[7])\n"
		"    if writer then\n"
		"      redis.call('ZADD', KEYS[9], until_ms, token)\n"
		"      redis.call('PEXPIRE', KEYS[9], ARGV[7])\n"
		"    end\n"
		"  end\n"
		"  return {0, hint, pos, holder(), free}\n"
		"end\n"
		"if ticket ~= '' then\n"
		"  redis.call('ZADD', KEYS[5], 'NX', ticket, token)\n"
		"  -- who waits, since when: for dlock status\n"
		"  redis.call('HSETNX', KEYS[5] .. ':info', token, ARGV[4])\n"
		"  redis.call('ZADD', KEYS[6], now + tonumber(ARGV[7]), token)\n"
		"  redis.call('PEXPIRE', KEYS[5], ARGV[7])\n"
		"  redis.call('PEXPIRE', KEYS[5] .. ':info', ARGV[7])\n"
		"  redis.call('PEXPIRE', KEYS[6], ARGV[7])\n"
		"  pos = redis.call('ZRANK', KEYS[5], token)\n"
		"  if pos > 0 then\n"
		"    local hint = kind == 'none' and -1 or redis.call('PTTL', KEYS[1])\n"
		"    -- and when the head would lapse, should it have died\n"
		"    local head = redis.call('ZRANGE', KEYS[5], 0, 0)\n"
		"    local lapse = redis.call('ZSCORE', KEYS[6], head[1])\n"
		"    if lapse then hint = sooner(hint, tonumber(lapse) - now) end\n"
		"    return refuse(hint)\n"
		"  end\n"
		"end\n"
		"local n\n"
		"if mode == 'x' then\n"
		"  if kind ~= 'none' then return refuse(redis.call('PTTL', KEYS[1]), nil, true) end\n"
		"  n = next_fence()\n"
		"  redis.call('SET', KEYS[1], token, 'PX', ARGV[2])\n"
		"  redis.call('HSET', KEYS[3], token, ARGV[4] .. '\\t' .. digits(n))\n"
		"  redis.call('PEXPIRE', KEYS[3], ARGV[2])\n"
		"else\n"
		"  if kind == 'string' then return refuse(redis.call('PTTL', KEYS[1])) end\n"
		"  local had = redis.call('GET', KEYS[4])\n"
		"  if kind == 'zset' and had and had ~= mode then\n"
		"    return redis.error_reply('DLOCKMODE the lock is held ' ..\n"
		"      (had == 's' and 'shared' or 'with --limit ' .. had))\n"
		"  end\n"
		"  -- Writers first: behind a live exclusive waiter, whose wake-up\n"
		"  -- comes first, and then wakes the readers; or, should it have\n"
		"  -- died, until it lapses.\n"
		"  local writer = redis.call('ZRANGEBYSCORE', KEYS[9], '(' .. now, '+inf',\n"
		"    'LIMIT', 0, 1, 'WITHSCORES')\n"
		"  if #writer > 0 then return refuse(tonumber(writer[2]) - now) end\n"
		"  if mode ~= 's' then\n"
		"    local limit = tonumber(mode)\n"
		"    -- Each holder here has one slot here: scan only when one is free.\n"
		"    local function free_slot()\n"
		"      if kind == 'zset' and redis.call('ZCARD', KEYS[1]) >= limit then\n"
		"        return -1\n"
		"      end\n"
		"      for i = 0, limit - 1 do\n"
		"        if redis.call('EXISTS', KEYS[7] .. ':' .. i) == 0 then return i end\n"
		"      end\n"
		"      return -1\n"
		"    end\n"
		"    local slot = tonumber(ARGV[8]) or free_slot()\n"
		"    if slot < 0 or slot >= limit or not redis.call('SET',\n"
		"        KEYS[7] .. ':' .. slot, token, 'NX', 'PX', ARGV[2]) then\n"
		"      local first = redis.call('ZRANGE', KEYS[1], 0, 0, 'WITHSCORES')\n"
		"      local hint = #first > 0 and math.max(0, tonumber(first[2]) - now) or -1\n"
		"      return refuse(hint, free_slot())\n"
		"    end\n"
		"    redis.call('HSET', KEYS[7], token, slot)\n"
		"    taken = slot\n"
		"  end\n"
		"  n = next_fence()\n"
		"  redis.call('ZADD', KEYS[1], now + tonumber(ARGV[2]), token)\n"
		"  redis.call('SET', KEYS[4], mode)\n"
		"  redis.call('HSET', KEYS[3], token, ARGV[4] .. '\\t' .. digits(n))\n"
		"  stretch(now)\n"
		"end\n"
		"redis.call('ZREM', KEYS[6], token)\n"
		"if mode == 'x' then redis.call('ZREM', KEYS[9], token) end\n"
		"if ticket ~= '' then\n"
		"  redis.call('ZREM', KEYS[5], token)\n"
		"  redis.call('HDEL', KEYS[5] .. ':info', token)\n"
		"  redis.call('DEL', KEYS[8] .. ':' .. token)\n"
		"end\n"
		"if ticket ~= '' or mode ~= 'x' then wake(KEYS[5], KEYS[8], KEYS[6]) end\n"
		"record(digits(n))\n"
		"return {1, n, taken}\n",
	.sha = "d81e53682e40ec8607b6f9f94b8677eb2659749c",
	.n_keys = 10,
};

/* KEYS: 1 lock, 2 holder info, 3 mode of a shared lock, 4 --limit slots
 * (acquire's 1, 3, 4, 7).
 * ARGV: 1 token, 2 ttl ms.
 * Returns 1 when extended, 0 when the lock is not ours (any more). */
const struct script script_extend = {
	.name = "extend",
	.body =
		"local t = redis.call('TIME')\n"
		"local now = t[1] * 1000 + math.floor(t[2] / 1000)\n"
		"-- a lock --min-hold keeps after its job is never lengthened\n"
		"local info = redis.call('HGET', KEYS[2], ARGV[1])\n"
		"if info and info:match('^' .. string.rep('[^\\t]*\\t', 6) .. '[0-9]+$') then\n"
		"  return 0\n"
		"end\n"
		"local kind = redis.call('TYPE', KEYS[1]).ok\n"
		"if kind == 'string' then\n"
		"  if redis.call('GET', KEYS[1]) ~= ARGV[1] then return 0 end\n"
		"  redis.call('PEXPIRE', KEYS[1], ARGV[2])\n"
		"  redis.call('PEXPIRE', KEYS[2], ARGV[2])\n"
		"  return 1\n"
		"end\n"
		"if kind ~= 'zset' then return 0 end\n"
		"local s = redis.call('ZSCORE', KEYS[1], ARGV[1])\n"
		"if not s or tonumber(s) <= now then return 0 end\n"
		"local slot = redis.call('HGET', KEYS[4], ARGV[1])\n"
		"if slot then\n"
		"  -- a slot that lapsed may have gone to someone else: not ours then\n"
		"  if redis.call('GET', KEYS[4] .. ':' .. slot) ~= ARGV[1] then return 0 end\n"
		"  redis.call('PEXPIRE', KEYS[4] .. ':' .. slot, ARGV[2])\n"
		"end\n"
		"redis.call('ZADD', KEYS[1], 'XX', now + tonumber(ARGV[2]), ARGV[1])\n"
		"local last = redis.call('ZRANGE', KEYS[1], -1, -1, 'WITHSCORES')\n"
		"local left = math.max(1, tonumber(last[2]) - now)\n"
		"redis.call('PEXPIRE', KEYS[1], left)\n"
		"redis.call('PEXPIRE', KEYS[3], left)\n"
		"redis.call('PEXPIRE', KEYS[4], left)\n"
		"redis.call('PEXPIRE', KEYS[2], left)\n"
		"return 1\n",
	.sha = "9561f8db238a52c4a9445cac0e6128befee37023",
	.n_keys = 4,
};

/* KEYS: 1 lock, 2 holder info, 3 mode of a shared lock, 4 --limit slots,
 * 5 fair queue, 6 wake list, 7 waiters, 8 exclusive waiters, 9 the
 * history, 10 the notices to holders (a list KEYS[10]..':'..token each).
 * ARGV: 1 token, 2 events the history keeps ('0': none), 3 who releases:
 * 'job' (the holder, its job over), 'undo' (an acquisition no command
 * used: a minority's grant, a lease too short to start), 'token' (dlock
 * release --token, maybe from elsewhere), 4 the job's exit status or '',
 * 5 how long it held, ms, or '', 6 its fence, 7 the caller's holder info,
 * 8 ('token') what the holder is told, 9 ('job') ms left of --min-hold,
 * or '', 10 ('job', with 9) when the job finished, the holder's ms.
 * Compare-and-delete, as redis-py, redsync and node-redlock release, then
 * one waiter is woken at once (not all: one of them could win), a writer
 * first. Our holder info goes even when the lock is no longer ours.
 * --min-hold: a lock still ours is kept instead, its lease (and slot)
 * shortened to ARGV[9] ms, never lengthened; its holder info stays, with
 * "\tfinished" added, and nobody is woken: a waiter would find it taken,
 * and each refusal tells waiters when the lease ends.
 * The history (a stream of at most ARGV[2] events, gone a week after the
 * last): 'job' writes "released" with the exit status and hold time, or
 * "lost" when the lock was no longer ours; 'undo' deletes the acquisition's
 * own "acquired" event; 'token' writes "released" naming the holder, the
 * hold time from its info's since (server clock less holder's: roughly),
 * and who released ("by"), unless --min-hold kept the lock after its job,
 * whose "released" is there already.
 * Returns 1 when released, 0 when the lock was not ours. */
const struct script script_release = {
	.name = "release",
	.body =
		"-- Wakes one waiter, if anyone waits (every waiter is in waiters): a\n"
		"-- live exclusive waiter (writers first) when writers is given, else\n"
		"-- the head of the fair queue, each on its own list; else whoever has\n"
		"-- waited longest on the common one (BLPOP serves in order). An\n"
		"-- element nobody takes goes after 2 s: it is for a waiter between\n"
		"-- its refusal and its BLPOP.\n"
		"local function wake(queue, list, waiters, writers, now)\n"
		"  if redis.call('ZCARD', waiters) == 0 then return end\n"
		"  local head = writers and redis.call('ZRANGEBYSCORE', writers,\n"
		"    '(' .. now, '+inf', 'LIMIT', 0, 1) or {}\n"
		"  if #head == 0 then head = redis.call('ZRANGE', queue, 0, 0) end\n"
		"  if #head > 0 then list = list .. ':' .. head[1] end\n"
		"  redis.call('LPUSH', list, '1')\n"
		"  redis.call('LTRIM', list, 0, 0)\n"
		"  redis.call('PEXPIRE', list, 2000)\n"
		"end\n"
		"local function clock()\n"
		"  local t = redis.call('TIME')\n"
		"  return t[1] * 1000 + math.floor(t[2] / 1000)\n"
		"end\n"
		"-- The common case first, in the fewest calls: an exclusive holder's\n"
		"-- job ended, no --min-hold. A string that holds our token has no\n"
		"-- --limit slot; TIME only when someone waits. (GET fails on a sorted\n"
		"-- set, a shared lock: the general case below then.)\n"
		"if ARGV[3] == 'job' and not tonumber(ARGV[9] or '') and\n"
		"    redis.pcall('GET', KEYS[1]) == ARGV[1] then\n"
		"  redis.call('DEL', KEYS[1])\n"
		"  redis.call('HDEL', KEYS[2], ARGV[1])\n"
		"  if redis.call('ZCARD', KEYS[7]) > 0 then\n"
		"    wake(KEYS[5], KEYS[6], KEYS[7], KEYS[8], clock())\n"
		"  end\n"
		"  if ARGV[2] ~= '0' then\n"
		"    redis.call('XADD', KEYS[9], 'MAXLEN', ARGV[2], '*', 'event', 'released',\n"
		"      'token', ARGV[1], 'holder', ARGV[7], 'fence', ARGV[6], 'exit', ARGV[4],\n"
		"      'held_ms', ARGV[5])\n"
		"    redis.call('PEXPIRE', KEYS[9], 604800000)\n"
		"  end\n"
		"  return 1\n"
		"end\n"
		"local now = clock()\n"
		"-- A holder's info as KEYS[2] keeps it (\"host\\tpid\\tuser\\tsince\\tcommand\\t\n"
		"-- fence[\\tfinished]\") -> the first five fields, and the fence ('' for an\n"
		"-- older dlock's).\n"
		"local function split(info)\n"
		"  local who, f = info:match('^(' .. string.rep('[^\\t]*\\t', 4) ..\n"
		"    '[^\\t]*)\\t([^\\t]*)\\t?[0-9]*$')\n"
		"  return who or info, f or ''\n"
		"end\n"
		"local token, how = ARGV[1], ARGV[3]\n"
		"local info = how == 'token' and redis.call('HGET', KEYS[2], token)\n"
		"-- A lock --min-hold kept after its job: the job's 'released' event is\n"
		"-- there, and no dlock listens for a notice any more.\n"
		"local finished = info and info:match('^' .. string.rep('[^\\t]*\\t', 6) .. '[0-9]+$')\n"
		"local slot = redis.call('HGET', KEYS[4], token)\n"
		"-- --min-hold: the ms left of the minimum, when the job ended sooner\n"
		"local hold = how == 'job' and tonumber(ARGV[9] or '')\n"
		"local ours, kept = true, false\n"
		"local kind = redis.call('TYPE', KEYS[1]).ok\n"
		"local ends = hold and kind == 'zset' and redis.call('ZSCORE', KEYS[1], token)\n"
		"if kind == 'string' and redis.call('GET', KEYS[1]) == token then\n"
		"  if hold then\n"
		"    kept = true\n"
		"    if hold < redis.call('PTTL', KEYS[1]) then\n"
		"      redis.call('PEXPIRE', KEYS[1], hold)\n"
		"      redis.call('PEXPIRE', KEYS[2], hold)\n"
		"    end\n"
		"  else\n"
		"    redis.call('DEL', KEYS[1])\n"
		"  end\n"
		"elseif ends and tonumber(ends) > now then\n"
		"  kept = true\n"
		"  ends = math.min(tonumber(ends), now + hold)\n"
		"  redis.call('ZADD', KEYS[1], 'XX', ends, token)\n"
		"  if slot and redis.call('GET', KEYS[4] .. ':' .. slot) == token then\n"
		"    redis.call('PEXPIRE', KEYS[4] .. ':' .. slot, math.max(1, ends - now))\n"
		"  end\n"
		"  -- as the extend script: every key of the lock goes with the last lease\n"
		"  local last = redis.call('ZRANGE', KEYS[1], -1, -1, 'WITHSCORES')\n"
		"  local left = math.max(1, tonumber(last[2]) - now)\n"
		"  for k = 1, 4 do redis.call('PEXPIRE', KEYS[k], left) end\n"
		"elseif kind == 'zset' and redis.call('ZREM', KEYS[1], token) == 1 then\n"
		"  local last = redis.call('ZRANGE', KEYS[1], -1, -1, 'WITHSCORES')\n"
		"  if #last == 0 then\n"
		"    redis.call('DEL', KEYS[1], KEYS[3])\n"
		"  else\n"
		"    local left = math.max(1, tonumber(last[2]) - now)\n"
		"    redis.call('PEXPIRE', KEYS[1], left)\n"
		"    redis.call('PEXPIRE', KEYS[3], left)\n"
		"  end\n"
		"else\n"
		"  ours = false\n"
		"end\n"
		"if slot and not kept then\n"
		"  if redis.call('GET', KEYS[4] .. ':' .. slot) == token then\n"
		"    redis.call('DEL', KEYS[4] .. ':' .. slot)\n"
		"  end\n"
		"  redis.call('HDEL', KEYS[4], token)\n"
		"end\n"
		"-- Not ours: was it, here? Its holder info tells, while the lease lasts.\n"
		"local owned = ours or redis.call('HEXISTS', KEYS[2], token) == 1\n"
		"if kept then\n"
		"  -- dlock status: held, command finished\n"
		"  local mine = redis.call('HGET', KEYS[2], token)\n"
		"  if mine then redis.call('HSET', KEYS[2], token, mine .. '\\t' .. ARGV[10]) end\n"
		"else\n"
		"  redis.call('HDEL', KEYS[2], token)\n"
		"end\n"
		"if ours and not kept then wake(KEYS[5], KEYS[6], KEYS[7], KEYS[8], now) end\n"
		"-- A lease that lapsed or was broken here: the stream tells, as long as\n"
		"-- it keeps the acquisition (a server that never granted it has no event).\n"
		"local function acquired_here()\n"
		"  for _, e in ipairs(redis.call('XREVRANGE', KEYS[9], '+', '-', 'COUNT', 1000)) do\n"
		"    if e[2][2] == 'acquired' and e[2][4] == token then return true end\n"
		"  end\n"
		"  return false\n"
		"end\n"
		"local function record(...)\n"
		"  redis.call('XADD', KEYS[9], 'MAXLEN', ARGV[2], '*', ...)\n"
		"  redis.call('PEXPIRE', KEYS[9], 604800000)\n"
		"end\n"
		"if ARGV[2] == '0' then\n"
		"  -- no history\n"
		"elseif how == 'job' and (owned or acquired_here()) then\n"
		"  record('event', ours and 'released' or 'lost', 'token', token,\n"
		"    'holder', ARGV[7], 'fence', ARGV[6], 'exit', ARGV[4], 'held_ms', ARGV[5])\n"
		"elseif how == 'undo' and ours then\n"
		"  for _, e in ipairs(redis.call('XREVRANGE', KEYS[9], '+', '-', 'COUNT', 8)) do\n"
		"    if e[2][2] == 'acquired' and e[2][4] == token then\n"
		"      redis.call('XDEL', KEYS[9], e[1])\n"
		"      break\n"
		"    end\n"
		"  end\n"
		"elseif how == 'token' and ours and not finished then\n"
		"  local who, f = split(info or '')\n"
		"  local since = tonumber(who:match('^[^\\t]*\\t[^\\t]*\\t[^\\t]*\\t([^\\t]*)'))\n"
		"  record('event', 'released', 'token', token, 'holder', who, 'fence', f,\n"
		"    'exit', '', 'held_ms', since and string.format('%d', math.max(0, now - since)) or '',\n"
		"    'by', ARGV[7])\n"
		"end\n"
		"-- A dlock running a job under that token is told at once, not at its\n"
		"-- next renewal: it BLPOPs this list.\n"
		"if how == 'token' and ours and not finished then\n"
		"  redis.call('LPUSH', KEYS[10] .. ':' .. token, ARGV[8])\n"
		"  redis.call('PEXPIRE', KEYS[10] .. ':' .. token, 60000)\n"
		"end\n"
		"if ours then return 1 end\n"
		"return 0\n",
	.sha = "959904cfc36c6c117ba8b0a9830c6f61a388dc9f",
	.n_keys = 10,
};

/* KEYS: 1 fair queue (and KEYS[1]..':info', its waiters' holder info),
 * 2 waiters, 3 wake list, 4 exclusive waiters.
 * ARGV: 1 token.
 * A waiter that stops waiting (acquired elsewhere, gave up, interrupted)
 * leaves the waiters, the queue and the writers; the queue's new head is
 * woken, and when a writer leaves, whoever waited behind it. */
const struct script script_leave = {
	.name = "leave",
	.body =
		"-- Wakes one waiter, if anyone waits (every waiter is in waiters): a\n"
		"-- live exclusive waiter (writers first) when writers is given, else\n"
		"-- the head of the fair queue, each on its own list; else whoever has\n"
		"-- waited longest on the common one (BLPOP serves in order). An\n"
		"-- element nobody takes goes after 2 s: it is for a waiter between\n"
		"-- its refusal and its BLPOP.\n"
		"local function wake(queue, list, waiters, writers, now)\n"
		"  if redis.call('ZCARD', waiters) == 0 then return end\n"
		"  local head = writers and redis.call('ZRANGEBYSCORE', writers,\n"
		"    '(' .. now, '+inf', 'LIMIT', 0, 1) or {}\n"
		"  if #head == 0 then head = redis.call('ZRANGE', queue, 0, 0) end\n"
		"  if #head > 0 then list = list .. ':' .. head[1] end\n"
		"  redis.call('LPUSH', list, '1')\n"
		"  redis.call('LTRIM', list, 0, 0)\n"
		"  redis.call('PEXPIRE', list, 2000)\n"
		"end\n"
		"local t = redis.call('TIME')\n"
		"local now = t[1] * 1000 + math.floor(t[2] / 1000)\n"
		"redis.call('ZREM', KEYS[1], ARGV[1])\n"
		"redis.call('HDEL', KEYS[1] .. ':info', ARGV[1])\n"
		"redis.call('ZREM', KEYS[2], ARGV[1])\n"
		"redis.call('DEL', KEYS[3] .. ':' .. ARGV[1])\n"
		"if redis.call('ZREM', KEYS[4], ARGV[1]) == 1 or\n"
		"    redis.call('ZCARD', KEYS[1]) > 0 then\n"
		"  wake(KEYS[1], KEYS[3], KEYS[2], KEYS[4], now)\n"
		"end\n"
		"return 1\n",
	.sha = "752091c0374a00f8c42b13701a0c58b703a94013",
	.n_keys = 4,
};

/* KEYS: 1 fencing counter. ARGV: 1 fence.
 * RedLock: raises the counter to ARGV[1] so the next majority, which meets
 * this one on at least one server, counts past it; it lapses a day later,
 * as the acquire script's does. Returns the new value. */
const struct script script_fence_max = {
	.name = "fence_max",
	.body =
		"local cur = tonumber(redis.call('GET', KEYS[1]) or '0')\n"
		"local want = tonumber(ARGV[1])\n"
		"if cur < want then\n"
		"  redis.call('SET', KEYS[1], ARGV[1], 'PX', 86400000)\n"
		"  return want\n"
		"end\n"
		"return cur\n",
	.sha = "57c521f0239b8643001b073335145e7d718f9f59",
	.n_keys = 1,
};

/* KEYS: as script_release's. ARGV: 1 events the history keeps ('0':
 * none), 2 the breaker's holder info, 3 what each holder is told.
 * dlock release --force: every holder of the lock, dlock's in any mode or
 * another client's string, loses it; each is pushed a notice on its list
 * (a running dlock BLPOPs it, and is told at once) and gets a "broken"
 * event with the breaker as "by". A key that does not expire, or of
 * another type, or a sorted set without dlock's mode key, is left alone.
 * Returns {1, type, pttl, token, info, token, info...} when broken (info
 * '' for a foreign holder), {0, type, pttl} when no lease was there, or
 * {-1, type, pttl} for a key left alone. */
const struct script script_force = {
	.name = "force",
	.body =
		"local t = redis.call('TIME')\n"
		"local now = t[1] * 1000 + math.floor(t[2] / 1000)\n"
		"-- Wakes one waiter, if anyone waits (every waiter is in waiters): a\n"
		"-- live exclusive waiter (writers first) when writers is given, else\n"
		"-- the head of the fair queue, each on its own list; else whoever has\n"
		"-- waited longest on the common one (BLPOP serves in order). An\n"
		"-- element nobody takes goes after 2 s: it is for a waiter between\n"
		"-- its refusal and its BLPOP.\n"
		"local function wake(queue, list, waiters, writers, now)\n"
		"  if redis.call('ZCARD', waiters) == 0 then return end\n"
		"  local head = writers and redis.call('ZRANGEBYSCORE', writers,\n"
		"    '(' .. now, '+inf', 'LIMIT', 0, 1) or {}\n"
		"  if #head == 0 then head = redis.call('ZRANGE', queue, 0, 0) end\n"
		"  if #head > 0 then list = list .. ':' .. head[1] end\n"
		"  redis.call('LPUSH', list, '1')\n"
		"  redis.call('LTRIM', list, 0, 0)\n"
		"  redis.call('PEXPIRE', list, 2000)\n"
		"end\n"
		"-- A holder's info as KEYS[2] keeps it (\"host\\tpid\\tuser\\tsince\\tcommand\\t\n"
		"-- fence[\\tfinished]\") -> the first five fields, and the fence ('' for an\n"
		"-- older dlock's).\n"
		"local function split(info)\n"
		"  local who, f = info:match('^(' .. string.rep('[^\\t]*\\t', 4) ..\n"
		"    '[^\\t]*)\\t([^\\t]*)\\t?[0-9]*$')\n"
		"  return who or info, f or ''\n"
		"end\n"
		"local kind = redis.call('TYPE', KEYS[1]).ok\n"
		"local pttl = redis.call('PTTL', KEYS[1])\n"
		"if kind == 'none' then return {0, kind, pttl} end\n"
		"-- Never a key that does not expire, or that is no lock: reported only.\n"
		"if pttl < 0 or (kind ~= 'string' and kind ~= 'zset') or\n"
		"    (kind == 'zset' and redis.call('EXISTS', KEYS[3]) == 0) then\n"
		"  return {-1, kind, pttl}\n"
		"end\n"
		"local tokens = {}\n"
		"if kind == 'string' then\n"
		"  tokens[1] = redis.call('GET', KEYS[1])\n"
		"else\n"
		"  local m = redis.call('ZRANGE', KEYS[1], 0, -1, 'WITHSCORES')\n"
		"  for i = 1, #m, 2 do\n"
		"    -- a lease that ran out is gone already, whoever holds it\n"
		"    if tonumber(m[i + 1]) > now then tokens[#tokens + 1] = m[i] end\n"
		"  end\n"
		"end\n"
		"local out = {#tokens > 0 and 1 or 0, kind, pttl}\n"
		"for _, token in ipairs(tokens) do\n"
		"  local info = redis.call('HGET', KEYS[2], token) or ''\n"
		"  local slot = redis.call('HGET', KEYS[4], token)\n"
		"  if slot and redis.call('GET', KEYS[4] .. ':' .. slot) == token then\n"
		"    redis.call('DEL', KEYS[4] .. ':' .. slot)\n"
		"  end\n"
		"  redis.call('LPUSH', KEYS[10] .. ':' .. token, ARGV[3])\n"
		"  redis.call('PEXPIRE', KEYS[10] .. ':' .. token, 60000)\n"
		"  if ARGV[1] ~= '0' then\n"
		"    local who, f = split(info)\n"
		"    redis.call('XADD', KEYS[9], 'MAXLEN', ARGV[1], '*', 'event', 'broken',\n"
		"      'token', token, 'holder', who, 'fence', f, 'by', ARGV[2])\n"
		"    redis.call('PEXPIRE', KEYS[9], 604800000)\n"
		"  end\n"
		"  out[#out + 1] = token\n"
		"  out[#out + 1] = info\n"
		"end\n"
		"redis.call('DEL', KEYS[1], KEYS[3], KEYS[4], KEYS[2])\n"
		"wake(KEYS[5], KEYS[6], KEYS[7], KEYS[8], now)\n"
		"return out\n",
	.sha = "8a4605f7e1fc7ecc4a89389b81fab3265af92d81",
	.n_keys = 10,
};

/* KEYS: 1 lock, 2 fencing counter, 3 holder info, 4 mode of a shared lock,
 * 5 fair queue (KEYS[5]..':info': its waiters' info), 6 waiters,
 * 7 --limit slots, 8 exclusive waiters. No ARGV. Reads only.
 * dlock status, one round trip: returns {server ms, type, pttl, fencing
 * counter or nil, mode or nil, {token, ms left, info or nil, slot or nil,
 * ...} of each live holder (a string's value is its holder's token),
 * {token, ticket, info or nil, ...} of each live --fair waiter in queue
 * order, live waiters, live exclusive waiters}. */
const struct script script_status = {
	.name = "status",
	.body =
		"local t = redis.call('TIME')\n"
		"local now = t[1] * 1000 + math.floor(t[2] / 1000)\n"
		"local kind = redis.call('TYPE', KEYS[1]).ok\n"
		"local pttl = redis.call('PTTL', KEYS[1])\n"
		"local holders, waiters = {}, {}\n"
		"local function add(token, left)\n"
		"  holders[#holders + 1] = token\n"
		"  holders[#holders + 1] = left\n"
		"  holders[#holders + 1] = redis.call('HGET', KEYS[3], token)\n"
		"  holders[#holders + 1] = redis.call('HGET', KEYS[7], token)\n"
		"end\n"
		"if kind == 'string' then\n"
		"  add(redis.call('GET', KEYS[1]), pttl)\n"
		"elseif kind == 'zset' then\n"
		"  local m = redis.call('ZRANGE', KEYS[1], 0, -1, 'WITHSCORES')\n"
		"  for i = 1, #m, 2 do\n"
		"    local left = math.floor(tonumber(m[i + 1]) - now)\n"
		"    if left > 0 then add(m[i], left) end\n"
		"  end\n"
		"end\n"
		"local q = redis.call('ZRANGE', KEYS[5], 0, -1, 'WITHSCORES')\n"
		"for i = 1, #q, 2 do\n"
		"  local alive = redis.call('ZSCORE', KEYS[6], q[i])\n"
		"  if alive and tonumber(alive) > now then\n"
		"    waiters[#waiters + 1] = q[i]\n"
		"    waiters[#waiters + 1] = q[i + 1]\n"
		"    waiters[#waiters + 1] = redis.call('HGET', KEYS[5] .. ':info', q[i])\n"
		"  end\n"
		"end\n"
		"local function get(key)\n"
		"  return redis.call('TYPE', key).ok == 'string' and redis.call('GET', key)\n"
		"end\n"
		"return {now, kind, pttl, get(KEYS[2]), get(KEYS[4]), holders, waiters,\n"
		"  redis.call('ZCOUNT', KEYS[6], '(' .. now, '+inf'),\n"
		"  redis.call('ZCOUNT', KEYS[8], '(' .. now, '+inf')}\n",
	.sha = "88fc6e7f1d960110aab76c31c01b7fa346c52d0d",
	.n_keys = 8,
};

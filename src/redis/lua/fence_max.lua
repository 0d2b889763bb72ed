-- KEYS: 1 fencing counter (and an exclusive holder's info: see
-- lib/holder.lua), 2 holder info (shared, --limit).
-- ARGV: 1 fence, 2 the holder's token.
-- Raises the counter to ARGV[1], and records ARGV[1] as the holder's
-- fence in its info. RedLock: so that the next majority, which meets this
-- one on at least one server, counts past it. -k: every key's counter
-- reaches the one fence the job was given (the largest of the keys'), so
-- that no key's next holder gets a smaller one. The key lapses a day
-- later, as the acquire script's does. Returns the counter.
-- numkeys: 2

-- include: lib/holder.lua
local v = redis.call('GET', KEYS[1])
local n = math.max(counter(v), tonumber(ARGV[1]))
local f = string.format('%d', n)
-- info with its fence field set to ARGV[1]
local function refenced(info)
  local who, rest = info:match('^(' .. string.rep('[^\t]*\t', 5) .. ')[0-9]*(.*)$')
  return who and who .. ARGV[1] .. rest or info
end
local info = info_in(v, ARGV[2])
if info then
  redis.call('SET', KEYS[1], f .. '\t' .. ARGV[2] .. '\t' .. refenced(info),
    'PX', 86400000)
elseif n > counter(v) then
  redis.call('SET', KEYS[1], f .. (v or ''):gsub('^[0-9]*', '', 1), 'PX', 86400000)
end
info = redis.call('HGET', KEYS[2], ARGV[2])
if info then redis.call('HSET', KEYS[2], ARGV[2], refenced(info)) end
return n

-- The holder info: "host\tpid\tuser\tsince\tcommand\tfence", and
-- "\tfinished" (the holder's ms) once --min-hold keeps the lock after its
-- job. dlock escapes no field: it puts no tab or newline in one.
-- A shared or --limit holder's is in the lock's holder info hash (token ->
-- info). An exclusive holder's is in the fencing counter's key, which
-- holds "F", or "F\tTOKEN\tINFO" for the last exclusive holder: one write
-- at acquisition for the fence, its day and the info, and nothing to
-- delete at release (an info whose token does not hold the lock is stale).

-- The counter in the fencing counter's key's value v (0: none).
local function counter(v)
  return tonumber(v and v:match('^[0-9]+') or '0')
end

-- The info of token in the counter's value v, or nil.
local function info_in(v, token)
  local t, info = (v or ''):match('^[0-9]+\t([^\t]*)\t(.*)$')
  if t == token then return info end
  return nil
end
-- The info of token, an exclusive holder (kind 'string') or not: from the
-- counter's key, then the hash (where a dlock before this one kept it).
local function info_of(token, kind, fence_key, owner_key)
  local info = kind == 'string' and info_in(redis.call('GET', fence_key), token)
  return info or redis.call('HGET', owner_key, token)
end
-- Whether info is of a holder --min-hold keeps after its job.
local function finished(info)
  return info and info:match('^' .. string.rep('[^\t]*\t', 6) .. '[0-9]+$') ~= nil
end
-- info -> the first five fields, and the fence ('' for an older dlock's).
local function split(info)
  local who, f = info:match('^(' .. string.rep('[^\t]*\t', 4) ..
    '[^\t]*)\t([^\t]*)\t?[0-9]*$')
  return who or info, f or ''
end

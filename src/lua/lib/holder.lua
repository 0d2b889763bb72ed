-- split(info): a holder's info as the holder info hash keeps it
-- ("host\tpid\tuser\tsince\tcommand\tfence[\tfinished]") -> the first
-- five fields, and the fence ('' for an older dlock's).
local function split(info)
  local who, f = info:match('^(' .. string.rep('[^\t]*\t', 4) ..
    '[^\t]*)\t([^\t]*)\t?[0-9]*$')
  return who or info, f or ''
end

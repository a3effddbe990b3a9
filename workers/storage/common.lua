local function int(n) return string.format('%d', n) end
local function ms_of(id)
  return tonumber(string.match(id, '^(%d+)'))
end
local function after(id)          -- the smallest entry id greater than id
  local ms, seq = string.match(id, '^(%d+)-(%d+)$')
  return ms .. '-' .. (tonumber(seq) + 1)
end
local function now_ms()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end
local function cursor_of(meta)
  return redis.call('HGET', meta, 'c') or '0-0'
end
-- What a commit compares: the cursor, the rebuild generation once a rebuild happened,
-- and the thread's incarnation (threads written before incarnations existed have none).
local function fence(c, g, i)
  local f = c or '0-0'
  if g then f = f .. '@' .. g end
  if i then f = f .. '#' .. i end
  return f
end
local function fence_of(meta)
  local m = redis.call('HMGET', meta, 'c', 'g', 'i')
  return fence(m[1], m[2], m[3])
end
local function has_backlog(log, cursor)
  return #redis.call('XRANGE', log, '(' .. cursor, '+', 'COUNT', 1) > 0
end
local function chunked(cmd, key, args, width)   -- Lua's unpack has a stack limit
  local step = 240 * width
  for i = 1, #args, step do
    local last = math.min(i + step - 1, #args)
    redis.call(cmd, key, unpack(args, i, last))
  end
end

-- A follower's resume: the change events after the version it holds, if the feed
-- still reaches back to it.
-- KEYS: meta feed
-- ARGV: after count
-- -> {'absent'}                   the thread does not exist (never written, or deleted)
--    {'current', cursor}          `after` is the thread's version: nothing to send
--    {'gap', cursor}              no chain of events leads from `after`: the feed was
--                                 trimmed past it, a rebuild happened at or after it,
--                                 a retry --skip moved the version without an event,
--                                 or it is no version of this thread
--    {'events', cursor, id, prev, event, ...}  up to `count` events, the first one's
--                                 prev being `after` (the caller checks the rest of the
--                                 chain as it applies them)
local m = redis.call('HMGET', KEYS[1], 'c', 'e', 'fb')
if not m[2] then return {'absent'} end
local cursor, after = m[1] or '0-0', ARGV[1]
local function le(x, y)        -- x <= y as entry ids
  local xm, xs = string.match(x, '^(%d+)-(%d+)$')
  local ym, ys = string.match(y, '^(%d+)-(%d+)$')
  xm, ym = tonumber(xm), tonumber(ym)
  return xm < ym or (xm == ym and tonumber(xs) <= tonumber(ys))
end
if m[3] and le(after, m[3]) then return {'gap', cursor} end
if after == cursor then return {'current', cursor} end
local entries = redis.call('XRANGE', KEYS[2], '(' .. after, '+', 'COUNT', tonumber(ARGV[2]))
if #entries == 0 then return {'gap', cursor} end
local out = {'events', cursor}
for i, entry in ipairs(entries) do
  local fields, prev, event = entry[2], nil, nil
  for j = 1, #fields, 2 do
    if fields[j] == 'p' then prev = fields[j + 1] else event = fields[j + 1] end
  end
  if i == 1 and prev ~= after then return {'gap', cursor} end
  out[#out + 1] = entry[1]
  out[#out + 1] = prev
  out[#out + 1] = event
end
return out

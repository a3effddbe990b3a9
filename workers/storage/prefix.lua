-- One instant of a thread, to read a prefix of its log from: time travel, audit and
-- rebuild (workers/prefix.py reads the rest of the prefix in pages after it). Read-only.
-- KEYS: meta pages log
-- ARGV: mode upto entries
--       mode: 'travel' | 'audit' | 'replay'; upto: an entry id ('audit' reads up to the
--       cursor); entries: how many log entries to return with it (0 for none)
-- -> {'missing'}: the thread does not exist (never written, or deleted)
--    {'unborn', b}: upto precedes b, the first entry of the thread's current
--       incarnation: no state of it ('travel', 'replay')
--    {'gone', c}: upto is before the cursor c and the log no longer holds the thread's
--       whole history: only the live state and what follows it can be served
--    {'live', c, g, i, first, b, entries, pages}: 'travel' at or after the cursor: the
--       live state (pages as {number, page}*) and the first `entries` entries after the
--       cursor, up to upto
--    {'log', c, g, i, first, b, entries, pages}: the first `entries` entries of the log up
--       to upto, from its first entry (`first`); the live state too in 'audit'
-- (g, i, b are '' where unset; entries as XRANGE gives them.)
local meta, pages, log = KEYS[1], KEYS[2], KEYS[3]
local mode, upto, count = ARGV[1], ARGV[2], tonumber(ARGV[3])
local m = redis.call('HMGET', meta, 'e', 'c', 'g', 'i', 'b', 'rb', 'sc')
if not m[1] then return {'missing'} end
local c, b = m[2] or '0-0', m[5]

-- Entry ids as strings that compare as Redis orders them (both parts zero-padded).
local function order(id)
  local ms, seq = string.match(id, '^(%d+)-(%d+)$')
  return string.rep('0', 20 - #ms) .. ms .. '-' .. string.rep('0', 20 - #seq) .. seq
end

-- Whether the log still holds every entry the thread was given: XTRIM only ever drops
-- a prefix, so the stream has lost nothing but the entries an operator skipped (meta
-- 'sc') exactly while it keeps all its entries added but those. 'rb' is an older
-- release's mark of a retention trim.
local whole, first = false, ''
if not m[6] and redis.call('EXISTS', log) == 1 then
  local info = redis.call('XINFO', 'STREAM', log)
  local length, added = 0, 0
  for at = 1, #info, 2 do
    local name = info[at]
    if name == 'length' then
      length = info[at + 1]
    elseif name == 'entries-added' then
      added = info[at + 1]
    elseif name == 'first-entry' and info[at + 1] then
      first = info[at + 1][1]
    end
  end
  whole = added == length + tonumber(m[7] or '0')
end
-- A thread born before births were recorded: its first entry, if the log is whole.
if not b and whole and first ~= '' then b = first end

if mode ~= 'audit' and b and order(upto) < order(b) then return {'unborn', b} end
local head = {c, m[3] or '', m[4] or '', first, b or ''}
local entries, held = {}, {}
if mode == 'travel' and order(upto) >= order(c) then
  if count > 0 then entries = redis.call('XRANGE', log, '(' .. c, upto, 'COUNT', count) end
  held = redis.call('HGETALL', pages)
  return {'live', head[1], head[2], head[3], head[4], head[5], entries, held}
end
if not whole then return {'gone', c} end
if mode == 'audit' then
  upto = c
  held = redis.call('HGETALL', pages)
end
if count > 0 then entries = redis.call('XRANGE', log, '-', upto, 'COUNT', count) end
return {'log', head[1], head[2], head[3], head[4], head[5], entries, held}

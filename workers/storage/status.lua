-- KEYS: meta log dirty
-- ARGV: ref
-- -> {} when never written, else {c, e, t, a, q, qe, applied, added, messages, dirty_since,
--     skipped (JSON), oldest_unapplied (an entry id, '' when none), now_ms}
if redis.call('EXISTS', KEYS[1]) == 0 then return {} end
local m = redis.call('HMGET', KEYS[1], 'c', 'e', 't', 'a', 'q', 'qe', 'k', 'm', 'sk')
local cursor = m[1] or '0-0'
local added, oldest = 0, ''
if redis.call('EXISTS', KEYS[2]) == 1 then
  local info = redis.call('XINFO', 'STREAM', KEYS[2])
  for i = 1, #info, 2 do
    if info[i] == 'entries-added' then added = info[i + 1] end
  end
  local first = redis.call('XRANGE', KEYS[2], '(' .. cursor, '+', 'COUNT', 1)
  if #first > 0 then oldest = first[1][1] end
end
return {cursor, m[2] or '0-0', m[3] or '', m[4] or '0', m[5] or '', m[6] or '',
        m[7] or '0', added, m[8] or '0', redis.call('ZSCORE', KEYS[3], ARGV[1]) or '',
        m[9] or '[]', oldest, now_ms()}

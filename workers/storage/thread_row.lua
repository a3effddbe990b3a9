-- One thread's row in the threads list: what GET /threads shows of it, read at once.
-- Read-only.
-- KEYS: meta log
-- -> {} when never written, else {version, messages, backlog, oldest_unapplied (an
--     entry id, '' when none), last_commit_ms ('' before the first), quarantine reason
--     ('' when none), last_enqueued, now_ms}
if redis.call('EXISTS', KEYS[1]) == 0 then return {} end
local m = redis.call('HMGET', KEYS[1], 'c', 'm', 'k', 't', 'q', 'e')
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
return {cursor, m[2] or '0', added - tonumber(m[3] or '0'), oldest, m[4] or '', m[5] or '',
        m[6] or '0-0', now_ms()}

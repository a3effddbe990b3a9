-- KEYS: meta log dirty expiry metadata
-- ARGV: ref ttl_ms
-- -> {} when never written, else {c, e, t, a, q, qe, applied, added, messages, dirty_since,
--     skipped (JSON), oldest_unapplied (an entry id, '' when none), now_ms,
--     birth (the incarnation's first entry), own_ttl_ms ('' none), pinned ('' | '1'),
--     expires_ms ('' none), {key, value JSON}* (its metadata)}
if redis.call('EXISTS', KEYS[1]) == 0 then return {} end
local m = redis.call('HMGET', KEYS[1], 'c', 'e', 't', 'a', 'q', 'qe', 'k', 'm', 'sk', 'b',
                     'x', 'pn')
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
-- When it expires: the sweep's time for it, or (while a backlog keeps it out of the
-- sweep's list) its TTL after its last activity; none without a TTL.
local expires = ''
if ttl_of(m[11], m[12], tonumber(ARGV[2])) > 0 then
  expires = redis.call('ZSCORE', KEYS[4], ARGV[1]) or
    int(last_active(m[3], m[2]) + ttl_of(m[11], m[12], tonumber(ARGV[2])))
end
return {cursor, m[2] or '0-0', m[3] or '', m[4] or '0', m[5] or '', m[6] or '',
        m[7] or '0', added, m[8] or '0', redis.call('ZSCORE', KEYS[3], ARGV[1]) or '',
        m[9] or '[]', oldest, now_ms(), m[10] or '', m[11] or '', m[12] or '', expires,
        redis.call('HGETALL', KEYS[5])}

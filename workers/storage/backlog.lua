-- The status listing of one bucket: its threads with a backlog and its quarantined
-- threads, each listed with its backlog and version as this same call reads them (a
-- list read first and statuses read after it showed threads drained in between with a
-- backlog of 0). Read-only.
-- KEYS: dirty quarantine   (the bucket's)
-- ARGV: limit meta_before meta_after log_before log_after   (the text before and after
--       the ref in a thread's meta key and log key)
-- The listed threads' keys are not in KEYS (which threads is what the call finds out);
-- they carry the bucket's tag, so they live in the slot KEYS named, which is what
-- Redis Cluster requires of a script.
-- -> {n_dirty, {ref, since_ms, backlog, version}* (the `limit` oldest),
--     n_quarantined, {ref, since_ms, backlog, version, reason, entry}* (the `limit` oldest)}
local limit = tonumber(ARGV[1])
local function thread(ref, since, extra)
  local meta, log = ARGV[2] .. ref .. ARGV[3], ARGV[4] .. ref .. ARGV[5]
  local m = redis.call('HMGET', meta, 'c', 'k', 'q', 'qe')
  local added = 0
  if redis.call('EXISTS', log) == 1 then
    local info = redis.call('XINFO', 'STREAM', log)
    for i = 1, #info, 2 do
      if info[i] == 'entries-added' then added = info[i + 1] end
    end
  end
  local row = {ref, since, added - tonumber(m[2] or '0'), m[1] or '0-0'}
  if extra then
    row[5] = m[3] or ''
    row[6] = m[4] or ''
  end
  return row
end
local out = {}
for n, set in ipairs({KEYS[1], KEYS[2]}) do
  local rows = {}
  local found = redis.call('ZRANGE', set, 0, limit - 1, 'WITHSCORES')
  for i = 1, #found, 2 do rows[#rows + 1] = thread(found[i], found[i + 1], n == 2) end
  out[#out + 1] = redis.call('ZCARD', set)
  out[#out + 1] = rows
end
return out

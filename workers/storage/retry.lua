-- An operator's retry: lift the quarantine and wake the thread; with skip, drop the
-- entry the drain failed on ('qe') wherever it lies after the cursor, and record it.
-- KEYS: meta sched dirty quarantine log
-- ARGV: ref sched_ms skip keep   (skip: '1' | '0')
-- -> {-1} when the thread does not exist (never written, or deleted): nothing is
--    written, so a retry cannot bring a thread's keys back;
--    else {was_quarantined(0|1), woke(0|1), skipped_entry_or_'', why_not_skipped_or_'',
--          backlog(0|1)}: woke when this call set the wake-up flag (the caller sends
--          the wake-up); a backlog without it has a wake-up already on its way
if redis.call('EXISTS', KEYS[1]) == 0 then return {-1} end
local m = redis.call('HMGET', KEYS[1], 'q', 'qe', 'c')
local reason, qe, cursor = m[1], m[2], m[3] or '0-0'
local skipped, why = '', ''
local function key_of(id)
  local ms, seq = string.match(id, '^(%d+)-(%d+)$')
  return tonumber(ms), tonumber(seq)
end
local function later(a, b)   -- entry id a > entry id b
  local am, as = key_of(a)
  local bm, bs = key_of(b)
  return am > bm or (am == bm and as > bs)
end
if ARGV[3] == '1' then
  if not qe then
    why = 'the thread is not quarantined: no failed entry to skip'
  elseif not later(qe, cursor) or #redis.call('XRANGE', KEYS[5], qe, qe) == 0 then
    why = 'entry ' .. qe .. ' is no longer pending in the log'
  else
    -- The culprit need not be the first pending entry (a batch fails on the entry that
    -- fails, wherever it sits). Only when it is first may the cursor move onto it:
    -- entries before it are still to be applied.
    local first = redis.call('XRANGE', KEYS[5], '(' .. cursor, '+', 'COUNT', 1)
    if first[1][1] == qe then redis.call('HSET', KEYS[1], 'c', qe) end
    redis.call('XDEL', KEYS[5], qe)
    redis.call('HINCRBY', KEYS[1], 'k', 1)   -- counted as handled: backlog stays exact
    redis.call('HINCRBY', KEYS[1], 'sc', 1)  -- entries removed from the log by a skip
    local list = cjson.decode(redis.call('HGET', KEYS[1], 'sk') or '[]')
    list[#list + 1] = {entry = qe, reason = reason or '', at_ms = now_ms()}
    while #list > tonumber(ARGV[4]) do table.remove(list, 1) end
    redis.call('HSET', KEYS[1], 'sk', cjson.encode(list))
    skipped = qe
  end
end
redis.call('HDEL', KEYS[1], 'q', 'qe')
redis.call('HSET', KEYS[1], 'a', 0)
redis.call('ZREM', KEYS[4], ARGV[1])
local was = reason and 1 or 0
if not has_backlog(KEYS[5], cursor_of(KEYS[1])) then
  redis.call('ZREM', KEYS[3], ARGV[1])
  return {was, 0, skipped, why, 0}
end
redis.call('ZADD', KEYS[3], 'NX', now_ms(), ARGV[1])
if redis.call('SET', KEYS[2], '1', 'NX', 'PX', ARGV[2]) then return {was, 1, skipped, why, 1} end
return {was, 0, skipped, why, 1}

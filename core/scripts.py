"""The Lua scripts: every multi-key change of a thread, each one atomic.

Every script names all its keys in KEYS and they share the thread's bucket tag, so each
runs on one Redis Cluster slot. Versions are stream entry ids ``<ms>-<seq>``. Meta hash
fields: ``c`` cursor (last applied entry id, the version), ``n`` next free position,
``e`` last enqueued entry id, ``t`` last commit time (ms), ``a`` drain attempts since
the last commit, ``q`` quarantine reason, ``qe`` the entry it failed on, ``k`` entries
applied or skipped (the backlog is the stream's ``entries-added`` minus ``k``, whatever
the retention, hand-written entries included), ``rb`` set once retention has trimmed
applied entries (from then on the log no longer replays the whole thread).

The scripts are the product: they are tested against a real ``redis-server``.
"""

from __future__ import annotations

from typing import Final

# Shared Lua helpers, prepended to the scripts that need them.
_LUA_HELPERS: Final = r"""
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
"""

INGEST: Final = (
    _LUA_HELPERS
    + r"""
-- One call appends for one or more threads (the producer groups a bulk's threads by
-- bucket, or all of them on a standalone server): the fixed cost of a script call is
-- paid once per group instead of once per thread.
-- KEYS: 7 per thread: log meta sched dirty threads dd dd_expiry
-- ARGV: dedupe_ms sched_ms n_threads, then per thread: ref n {delta_id payload ids}*n
--       (delta_id '' = no dedupe; ids: msgpack array of the ids the delta mentions)
-- -> per thread, in order: woke(0|1), then {version, new(0|1)} per delta
-- Every redis.call costs about a microsecond on top of its command: the common path
-- (no delta_id, flag already set) makes four per thread plus one per delta.
local dedupe_ms, sched_ms, threads = tonumber(ARGV[1]), ARGV[2], tonumber(ARGV[3])
local now = false
local out = {}

local function ingest(k, ref, n, a)
  local log, meta, sched, dirty, all, dd, ddx =
    KEYS[k + 1], KEYS[k + 2], KEYS[k + 3], KEYS[k + 4], KEYS[k + 5], KEYS[k + 6], KEYS[k + 7]
  local deduping = false
  for i = 0, n - 1 do
    if ARGV[a + 3 * i] ~= '' then deduping = true end
  end
  if deduping then
    -- Expired delta_ids are dropped by the calls that add new ones: the index stays
    -- bounded by what a window holds, and the whole key lapses a window after the last.
    now = now or now_ms()
    local expired = redis.call('ZRANGEBYSCORE', ddx, '-inf', now, 'LIMIT', 0, 2 * n + 8)
    if #expired > 0 then
      chunked('HDEL', dd, expired, 1)
      chunked('ZREM', ddx, expired, 1)
    end
  end
  local woke = #out + 1
  out[woke] = 0
  local first, added, recorded = false, false, false
  for i = 0, n - 1 do
    local delta_id, payload, ids = ARGV[a + 3 * i], ARGV[a + 1 + 3 * i], ARGV[a + 2 + 3 * i]
    local seen = false
    if delta_id ~= '' then seen = redis.call('HGET', dd, delta_id) end
    if seen then
      out[#out + 1] = seen
      out[#out + 1] = 0
    else
      local v
      if ids ~= '' then
        v = redis.call('XADD', log, '*', 'd', payload, 'i', ids)
      else
        v = redis.call('XADD', log, '*', 'd', payload)
      end
      if delta_id ~= '' then
        redis.call('HSET', dd, delta_id, v)
        redis.call('ZADD', ddx, now + dedupe_ms, delta_id)
        recorded = true
      end
      out[#out + 1] = v
      out[#out + 1] = 1
      first = first or v
      added = v
    end
  end
  if not added then return end
  -- 'e' is new only on a thread's first append (or its first after a delete).
  if redis.call('HSET', meta, 'e', added) == 1 then redis.call('SADD', all, ref) end
  if recorded and dedupe_ms > 0 then
    redis.call('PEXPIRE', dd, dedupe_ms)
    redis.call('PEXPIRE', ddx, dedupe_ms)
  end
  -- A set flag implies the thread is already in its bucket's dirty set (ingest and
  -- retry add it before setting the flag; only a commit without backlog or a
  -- quarantine removes it, and they clear the flag with it). A quarantined thread
  -- stays out of the dirty set until an operator retries it.
  local quarantined = redis.call('HGET', meta, 'q')
  if not quarantined and redis.call('SET', sched, '1', 'NX', 'PX', sched_ms) then
    redis.call('ZADD', dirty, 'NX', ms_of(first), ref)
    out[woke] = 1
  end
end

local a = 4
for t = 0, threads - 1 do
  local ref, n = ARGV[a], tonumber(ARGV[a + 1])
  ingest(7 * t, ref, n, a + 2)
  a = a + 2 + 3 * n
end
return out
"""
)

READ_BATCH: Final = (
    _LUA_HELPERS
    + r"""
-- Reads the next batch of one or more threads (a drain round reads all of a task's
-- threads with one call: the fixed cost of a script call is paid once per round).
-- KEYS: 3 per thread: meta log order      ARGV: 1 per thread: max_entries
-- -> per thread: {cursor, next_position, quarantine_reason, attempts, n, complete,
--     entry1, payload1, ..., entryN, payloadN, id1, position1, ...}
-- The positions of the ids the entries mention come with them (one round trip for the
-- worker instead of two); complete = 0 when an entry does not list its ids.
local function read(meta_key, log, order, max_entries)
  local cursor = cursor_of(meta_key)
  local meta = redis.call('HMGET', meta_key, 'n', 'q', 'a')
  local out = {cursor, meta[1] or '0', meta[2] or '', tonumber(meta[3] or '0'), 0, 0}
  if meta[2] then return out end
  local entries = redis.call('XRANGE', log, '(' .. cursor, '+', 'COUNT', max_entries)
  if #entries == 0 then return out end
  out[4] = redis.call('HINCRBY', meta_key, 'a', 1)
  out[5] = #entries
  local ids, seen, complete = {}, {}, 1
  for _, entry in ipairs(entries) do
    local payload, mentioned = false, false
    for j = 1, #entry[2], 2 do
      local name = entry[2][j]
      if name == 'd' then
        payload = entry[2][j + 1]
      elseif name == 'i' then
        mentioned = entry[2][j + 1]
      end
    end
    out[#out + 1] = entry[1]
    out[#out + 1] = payload or ''
    local ok, list = false, nil
    if mentioned then ok, list = pcall(cmsgpack.unpack, mentioned) end
    if ok and type(list) == 'table' then
      for _, id in ipairs(list) do
        if type(id) == 'string' and not seen[id] then
          seen[id] = true
          ids[#ids + 1] = id
        end
      end
    else
      complete = 0
    end
  end
  out[6] = complete
  if complete == 1 then
    for i = 1, #ids, 4000 do
      local last = math.min(i + 3999, #ids)
      local scores = redis.call('ZMSCORE', order, unpack(ids, i, last))
      for j, score in ipairs(scores) do
        if score then
          out[#out + 1] = ids[i + j - 1]
          out[#out + 1] = score
        end
      end
    end
  end
  return out
end

local all = {}
for t = 0, #ARGV - 1 do
  all[t + 1] = read(KEYS[3 * t + 1], KEYS[3 * t + 2], KEYS[3 * t + 3], tonumber(ARGV[t + 1]))
end
return all
"""
)

COMMIT: Final = (
    _LUA_HELPERS
    + r"""
-- Compare-and-set commits of one or more threads (a drain round commits all of a
-- task's threads with one call; each thread's commit stands or fails on its own).
-- KEYS: 6 per thread: meta msgs order log sched dirty
-- ARGV: per thread: count, then its count arguments:
--       expected_cursor new_cursor next_position cleared n_removed n_upserts
--       retention_ms sched_ms ref n_entries {removed_id}*n_removed {id position payload}*n_upserts
-- -> per thread: {0} when the cursor moved (a stale or concurrent worker: re-read),
--    else {1, more, now_ms}
local now = false

local function commit(k, a)   -- KEYS[k + i] and ARGV[a + i] are the thread's i-th
  local meta, msgs, order, log, sched, dirty =
    KEYS[k + 1], KEYS[k + 2], KEYS[k + 3], KEYS[k + 4], KEYS[k + 5], KEYS[k + 6]
  if cursor_of(meta) ~= ARGV[a + 1] then return {0} end
  local new_cursor, n_removed, n_upserts = ARGV[a + 2], tonumber(ARGV[a + 5]), tonumber(ARGV[a + 6])
  if ARGV[a + 4] == '1' then redis.call('DEL', msgs, order) end
  local base = a + 11
  if n_removed > 0 then
    local removed = {unpack(ARGV, base, base + n_removed - 1)}
    chunked('HDEL', msgs, removed, 1)
    chunked('ZREM', order, removed, 1)
  end
  base = base + n_removed
  if n_upserts > 0 then
    local fields, scores = {}, {}
    for i = 0, n_upserts - 1 do
      local id, pos, payload = ARGV[base + 3 * i], ARGV[base + 3 * i + 1], ARGV[base + 3 * i + 2]
      fields[#fields + 1] = id
      fields[#fields + 1] = payload
      scores[#scores + 1] = pos
      scores[#scores + 1] = id
    end
    chunked('HSET', msgs, fields, 2)
    chunked('ZADD', order, scores, 2)
  end
  now = now or now_ms()
  redis.call('HSET', meta, 'c', new_cursor, 'n', ARGV[a + 3], 't', now, 'a', 0)
  redis.call('HINCRBY', meta, 'k', ARGV[a + 10])
  local threshold = after(new_cursor)
  local retention = tonumber(ARGV[a + 7])
  if retention > 0 then
    local keep_from = (now - retention) .. '-0'
    if ms_of(keep_from) < ms_of(threshold) then threshold = keep_from end
  end
  local trimmed = redis.call('XTRIM', log, 'MINID', threshold)
  if retention > 0 and trimmed > 0 then
    -- Entries past the retention window are gone: replays from this log are no longer exact.
    redis.call('HSET', meta, 'rb', threshold)
  end
  if has_backlog(log, new_cursor) then
    redis.call('PEXPIRE', sched, ARGV[a + 8])
    return {1, 1, now}
  end
  redis.call('DEL', sched)
  redis.call('ZREM', dirty, ARGV[a + 9])
  return {1, 0, now}
end

local all, a = {}, 0
for t = 0, #KEYS / 6 - 1 do
  all[t + 1] = commit(6 * t, a + 1)
  a = a + 1 + tonumber(ARGV[a + 1])
end
return all
"""
)

FAIL: Final = (
    _LUA_HELPERS
    + r"""
-- KEYS: meta sched dirty quarantine   ARGV: limit reason entry ref backoff_ms
-- -> 1 when the thread is now quarantined
local attempts = tonumber(redis.call('HGET', KEYS[1], 'a') or '0')
if attempts < tonumber(ARGV[1]) then
  redis.call('PEXPIRE', KEYS[2], ARGV[5])
  return 0
end
redis.call('HSET', KEYS[1], 'q', ARGV[2], 'qe', ARGV[3])
redis.call('ZREM', KEYS[3], ARGV[4])
redis.call('ZADD', KEYS[4], now_ms(), ARGV[4])
redis.call('DEL', KEYS[2])
return 1
"""
)

RETRY: Final = (
    _LUA_HELPERS
    + r"""
-- KEYS: meta sched dirty quarantine log   ARGV: ref sched_ms skip('1'|'0')
-- -> {woke, skipped_entry_or_''}
local skipped = ''
local qe = redis.call('HGET', KEYS[1], 'qe')
if ARGV[3] == '1' and qe then
  local cursor = cursor_of(KEYS[1])
  local first = redis.call('XRANGE', KEYS[5], '(' .. cursor, '+', 'COUNT', 1)
  if #first > 0 and first[1][1] == qe then
    redis.call('HSET', KEYS[1], 'c', qe)
    redis.call('HINCRBY', KEYS[1], 'k', 1)
    redis.call('XDEL', KEYS[5], qe)
    skipped = qe
  end
end
redis.call('HDEL', KEYS[1], 'q', 'qe')
redis.call('HSET', KEYS[1], 'a', 0)
redis.call('ZREM', KEYS[4], ARGV[1])
if not has_backlog(KEYS[5], cursor_of(KEYS[1])) then
  redis.call('ZREM', KEYS[3], ARGV[1])
  return {0, skipped}
end
redis.call('ZADD', KEYS[3], 'NX', now_ms(), ARGV[1])
if redis.call('SET', KEYS[2], '1', 'NX', 'PX', ARGV[2]) then return {1, skipped} end
return {0, skipped}
"""
)

WAKE: Final = (
    _LUA_HELPERS
    + r"""
-- The sweeper's check.  KEYS: meta log sched dirty   ARGV: ref sched_ms
-- -> 1 when the caller must send the wake-up (it now holds the flag)
if redis.call('HGET', KEYS[1], 'q') then return 0 end
if not has_backlog(KEYS[2], cursor_of(KEYS[1])) then
  redis.call('ZREM', KEYS[4], ARGV[1])
  return 0
end
if redis.call('SET', KEYS[3], '1', 'NX', 'PX', ARGV[2]) then return 1 end
return 0
"""
)

READ_STATE: Final = (
    _LUA_HELPERS
    + r"""
-- KEYS: meta order msgs   ARGV: mode('all'|'after'|'before') anchor_id limit(-1 = all)
-- -> {cursor, total, has_more, anchor_found, {id1, ...}, {body1, ...}} or {} when never
-- written (the lists go back as ZRANGE and HMGET gave them: a loop over them in Lua cost
-- a fifth of a read). A body is stored without its id: the id is its field.
if redis.call('EXISTS', KEYS[1]) == 0 then return {} end
local mode, anchor, limit = ARGV[1], ARGV[2], tonumber(ARGV[3])
local cursor = cursor_of(KEYS[1])
local total = redis.call('ZCARD', KEYS[2])
local ids
local found = 1
if mode == 'all' then
  ids = redis.call('ZRANGE', KEYS[2], 0, limit < 0 and -1 or limit)
else
  local score = redis.call('ZSCORE', KEYS[2], anchor)
  if not score then return {cursor, total, 0, 0} end
  local lim = limit < 0 and total or limit + 1
  if mode == 'after' then
    ids = redis.call('ZRANGEBYSCORE', KEYS[2], '(' .. score, '+inf', 'LIMIT', 0, lim)
  else
    local rev = redis.call('ZREVRANGEBYSCORE', KEYS[2], '(' .. score, '-inf', 'LIMIT', 0, lim)
    ids = {}
    for i = #rev, 1, -1 do ids[#ids + 1] = rev[i] end
  end
end
local more = 0
if limit >= 0 and #ids > limit then
  more = 1
  if mode == 'before' then table.remove(ids, 1) else table.remove(ids) end
end
if #ids <= 4000 then
  if #ids == 0 then return {cursor, total, more, found, {}, {}} end
  return {cursor, total, more, found, ids, redis.call('HMGET', KEYS[3], unpack(ids))}
end
local bodies = {}   -- Lua's unpack has a stack limit: read long threads in slices
for i = 1, #ids, 4000 do
  local part = redis.call('HMGET', KEYS[3], unpack(ids, i, math.min(i + 3999, #ids)))
  for _, body in ipairs(part) do bodies[#bodies + 1] = body end
end
return {cursor, total, more, found, ids, bodies}
"""
)

DELETE: Final = r"""
-- KEYS: log meta msgs order sched dd dd_expiry dirty quarantine threads   ARGV: ref
local existed = redis.call('EXISTS', KEYS[2])
redis.call('DEL', KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5], KEYS[6], KEYS[7])
redis.call('ZREM', KEYS[8], ARGV[1])
redis.call('ZREM', KEYS[9], ARGV[1])
redis.call('SREM', KEYS[10], ARGV[1])
return existed
"""

STATUS: Final = r"""
-- KEYS: meta log order dirty   ARGV: ref
-- -> {} when never written, else {c, e, t, a, q, qe, applied, added, messages, dirty_since}
if redis.call('EXISTS', KEYS[1]) == 0 then return {} end
local m = redis.call('HMGET', KEYS[1], 'c', 'e', 't', 'a', 'q', 'qe', 'k')
local added = 0
if redis.call('EXISTS', KEYS[2]) == 1 then
  local info = redis.call('XINFO', 'STREAM', KEYS[2])
  for i = 1, #info, 2 do
    if info[i] == 'entries-added' then added = info[i + 1] end
  end
end
return {m[1] or '0-0', m[2] or '0-0', m[3] or '', m[4] or '0', m[5] or '', m[6] or '',
        m[7] or '0', added, redis.call('ZCARD', KEYS[3]),
        redis.call('ZSCORE', KEYS[4], ARGV[1]) or ''}
"""

REBUILD: Final = r"""
-- Replace a thread's state with a replayed one, fenced like any commit.
-- KEYS: meta msgs order   ARGV: expected_cursor next_position n {id position payload}*n
-- -> 1 done, 0 the cursor moved meanwhile (replay again)
local cursor = redis.call('HGET', KEYS[1], 'c') or '0-0'
if cursor ~= ARGV[1] then return 0 end
redis.call('DEL', KEYS[2], KEYS[3])
local n = tonumber(ARGV[3])
for i = 0, n - 1 do
  local id, pos, payload = ARGV[4 + 3 * i], ARGV[5 + 3 * i], ARGV[6 + 3 * i]
  redis.call('HSET', KEYS[2], id, payload)
  redis.call('ZADD', KEYS[3], pos, id)
end
redis.call('HSET', KEYS[1], 'n', ARGV[2])
return 1
"""

"""The Lua scripts: every multi-key change of a thread, each one atomic.

Every script names all its keys in KEYS and they share the thread's bucket tag, so each
runs on one Redis Cluster slot. Versions are stream entry ids ``<ms>-<seq>``. Meta hash
fields: ``c`` cursor (last applied entry id, the version), ``n`` next free position,
``e`` last enqueued entry id, ``t`` last commit time (ms), ``a`` drain attempts since
the last commit, ``q`` quarantine reason, ``qe`` the entry it failed on, ``k`` entries
applied or skipped (the backlog is the stream's ``entries-added`` minus ``k``, whatever
the retention, hand-written entries included), ``rb`` set by earlier releases once
retention had trimmed applied entries (no longer written; still read: such a log does
not replay the whole thread), ``sk`` the
entries an operator skipped (JSON, the latest :data:`SKIPPED_KEPT`: entry, reason, at_ms)
and ``sc`` how many were skipped in all (each was deleted from the log: XDEL).

``b`` is the first entry of the thread's current incarnation, set at its birth: a version
before it names no state of this thread. Trims are not recorded: ``PREFIX`` reads whether
the log still holds the whole thread off the stream (entries added = entries kept +
``sc``), whatever the retention and whichever release trimmed.

The scripts are the product: they are tested against a real ``redis-server``.
"""

from __future__ import annotations

from typing import Final

from threadfold.core.pages import BUCKET_ENTRIES, MAX_PAGE_RECORDS, PAGE_BYTES

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
"""

_LUA_STATE: Final = (
    r"""
local PAGE_BYTES, MAX_PAGE_RECORDS, BUCKET_ENTRIES = """
    + f"{PAGE_BYTES}, {MAX_PAGE_RECORDS}, {BUCKET_ENTRIES}"
    + r"""

-- A thread's state (see core/pages.py): two hashes.
--   pages: page number -> records; the record at position p is in page floor(p / per),
--          records in position order, `per` the thread's positions per page (meta 'pp').
--          Record: position, id length, body length (3 x 4
--          bytes, big-endian), id, body.
--   index: bucket number -> entries (4-byte id fingerprint, 4-byte position), a linear
--          hash over the fingerprints; meta 'ib' holds the number of buckets.
-- Every page and bucket is found by arithmetic: no lookup of where a blob is, and no
-- blob read that a change does not rewrite. (Every string Redis hands Lua is hashed
-- byte by byte, so bytes moved into Lua are the cost to keep down.)

local function page_of(pos, per) return math.floor(pos / per) end

-- The n records to insert that ARGV lists from `first` as {fingerprint position record}*:
-- recs = {pos, record}* for the pages, added = {fingerprint, pos}* for the index.
local function inserts_of(first, n)
  local recs, added = {}, {}
  for i = first, first + 3 * n - 1, 3 do
    local pos = tonumber(ARGV[i + 1])
    recs[#recs + 1] = pos
    recs[#recs + 1] = ARGV[i + 2]
    added[#added + 1] = ARGV[i]
    added[#added + 1] = pos
  end
  return recs, added
end

-- Positions per page for records like these ({pos, record}*): as many as fit in
-- PAGE_BYTES on average, 1 to MAX_PAGE_RECORDS. Chosen when a thread (re)starts empty
-- and kept in its meta ('pp') while it holds records: a page's cost to rewrite is its
-- bytes, its overhead is per page.
local function positions_per_page(recs)
  local bytes = 0
  for i = 2, #recs, 2 do bytes = bytes + #recs[i] end
  local per = math.floor(PAGE_BYTES / math.max(1, bytes / (#recs / 2)))
  return math.max(1, math.min(MAX_PAGE_RECORDS, per))
end

-- Many fields in one call each way (a call costs more than the bytes it moves here):
-- HMGET of `fields` -> {field = value or ''}; HSET of {field, value}*; HDEL of fields.
local function read_fields(key, fields)
  local got = {}
  for i = 1, #fields, 4000 do   -- Lua's unpack has a stack limit
    local part = {unpack(fields, i, math.min(i + 3999, #fields))}
    for j, v in ipairs(redis.call('HMGET', key, unpack(part))) do got[part[j]] = v or '' end
  end
  return got
end
local function write_fields(key, pairs_, dropped)
  -- Deletes first: a field both dropped and written (a page emptied by a batch, then
  -- appended to by the same batch) ends up written.
  for i = 1, #dropped, 4000 do
    redis.call('HDEL', key, unpack(dropped, i, math.min(i + 3999, #dropped)))
  end
  for i = 1, #pairs_, 4000 do
    redis.call('HSET', key, unpack(pairs_, i, math.min(i + 3999, #pairs_)))
  end
end

local function bucket_of(fp, buckets)   -- linear hashing: buckets [0, n - top) are split
  local top = 1
  while top * 2 <= buckets do top = top * 2 end
  local b = fp % (top * 2)
  if b >= buckets then b = fp % top end
  return b
end

-- Where the record at pos lies in a page: its first byte, id length, body length (or
-- false). Headers are walked without building anything.
local function record_at(page, pos)
  local at, n = 1, #page
  while at <= n do
    local p, il, bl = struct.unpack('>I4I4I4', page, at)
    if p == pos then return at, il, bl end
    if p > pos then return false end
    at = at + 12 + il + bl
  end
  return false
end

-- Where `needle` starts in a bucket at or after `from`, as an entry's first byte or
-- its fingerprint: a match must be entry-aligned (or false).
local function entry_at(chunk, needle, from)
  while true do
    local s = string.find(chunk, needle, from, true)
    if not s or (s - 1) % 8 == 0 then return s or false end
    from = s + 1
  end
end

-- The candidate positions of a fingerprint (4 bytes), from a thread's index of
-- `buckets` buckets (each bucket is read once per call; the buckets of `expected`
-- fingerprints, when given, all at once).
local function matcher(index, buckets, expected)
  local chunks = {}
  if expected and buckets > 0 then
    local wanted, seen = {}, {}
    for _, fpb in ipairs(expected) do
      local b = bucket_of(struct.unpack('>I4', fpb), buckets)
      if not seen[b] then
        seen[b] = true
        wanted[#wanted + 1] = b
      end
    end
    chunks = read_fields(index, wanted)
  end
  return function(fpb)
    local found = {}
    if buckets == 0 then return found end
    local b = bucket_of(struct.unpack('>I4', fpb), buckets)
    local chunk = chunks[b]
    if not chunk then
      chunk = redis.call('HGET', index, b) or ''
      chunks[b] = chunk
    end
    local s = entry_at(chunk, fpb, 1)
    while s do
      found[#found + 1] = struct.unpack('>I4', chunk, s + 4)
      s = entry_at(chunk, fpb, s + 8)
    end
    return found
  end
end

-- An exact lookup for one thread: (id, fingerprint bytes) -> position and the page
-- holding it (or false): a candidate is confirmed against its record's id.
local function finder(pages, index, buckets, per)
  local candidates, pages_read = matcher(index, buckets), {}
  return function(id, fpb)
    for _, pos in ipairs(candidates(fpb)) do
      local number = page_of(pos, per)
      local page = pages_read[number]
      if page == nil then
        page = redis.call('HGET', pages, number) or ''
        pages_read[number] = page
      end
      local at, il = record_at(page, pos)
      if at and il == #id and string.sub(page, at + 12, at + 11 + il) == id then
        return pos, page
      end
    end
    return false
  end
end

-- Appends records past every stored position: recs = {pos, record}*, ascending. Only
-- the first one's page can exist already (the last page, partly filled): as stored, or
-- as this commit rewrites it (in `written`, {number, page}*) or empties it (in
-- `dropped`). The pages it makes are added to `written`: the caller writes them all
-- in one call.
local function append_pages(pages, per, recs, written, dropped)
  local i = 1
  while i <= #recs do
    local number = page_of(recs[i], per)
    local parts = {}
    if i == 1 and recs[1] % per ~= 0 then
      local current = false
      for j = 1, #written, 2 do
        if tonumber(written[j]) == number then current = written[j + 1] end
      end
      for _, d in ipairs(dropped) do
        if tonumber(d) == number then current = '' end
      end
      parts[1] = current or redis.call('HGET', pages, number) or ''
    end
    while i <= #recs and page_of(recs[i], per) == number do
      parts[#parts + 1] = recs[i + 1]
      i = i + 2
    end
    written[#written + 1] = number   -- after any rewrite of it: in one HSET, the last wins
    written[#written + 1] = table.concat(parts)
  end
end

-- Adds and removes index entries (adds, dels = {fingerprint bytes, pos}*) of a thread
-- whose index has `buckets` buckets and will hold `total` entries; one rewrite per
-- bucket touched, then buckets split one at a time while they average more than
-- BUCKET_ENTRIES. -> the number of buckets now.
local function edit_index(index, adds, dels, buckets, total)
  if buckets == 0 then buckets = 1 end
  local touched, order = {}, {}
  local function bucket(fpb)
    local b = bucket_of(struct.unpack('>I4', fpb), buckets)
    local t = touched[b]
    if not t then
      t = {'', {}, {}}
      touched[b] = t
      order[#order + 1] = b
    end
    return t
  end
  for i = 1, #dels, 2 do bucket(dels[i])[3][dels[i] .. struct.pack('>I4', dels[i + 1])] = true end
  for i = 1, #adds, 2 do
    local t = bucket(adds[i])
    t[2][#t[2] + 1] = adds[i] .. struct.pack('>I4', adds[i + 1])
  end
  local current, written, dropped = read_fields(index, order), {}, {}
  for _, b in ipairs(order) do
    local chunk, added, gone = current[b], touched[b][2], touched[b][3]
    local parts, cuts, kept = {}, {}, 1
    for e in pairs(gone) do
      local s = entry_at(chunk, e, 1)
      if s then cuts[#cuts + 1] = s end
    end
    table.sort(cuts)
    for _, s in ipairs(cuts) do
      if kept < s then parts[#parts + 1] = string.sub(chunk, kept, s - 1) end
      kept = s + 8
    end
    if kept <= #chunk then parts[#parts + 1] = string.sub(chunk, kept) end
    for _, e in ipairs(added) do parts[#parts + 1] = e end
    local new = table.concat(parts)
    if #new > 0 then
      written[#written + 1] = b
      written[#written + 1] = new
    else
      dropped[#dropped + 1] = b
    end
  end
  write_fields(index, written, dropped)
  while total > buckets * BUCKET_ENTRIES do   -- split the next bucket in line
    local top = 1
    while top * 2 <= buckets do top = top * 2 end
    local low = buckets - top
    local chunk = redis.call('HGET', index, low) or ''
    local stay, move = {}, {}
    for at = 1, #chunk, 8 do
      local e = string.sub(chunk, at, at + 7)
      if struct.unpack('>I4', e) % (top * 2) == low then
        stay[#stay + 1] = e
      else
        move[#move + 1] = e
      end
    end
    if #stay > 0 then
      redis.call('HSET', index, low, table.concat(stay))
    else
      redis.call('HDEL', index, low)
    end
    if #move > 0 then redis.call('HSET', index, low + top, table.concat(move)) end
    buckets = buckets + 1
  end
  return buckets
end
"""
)


INGEST: Final = (
    _LUA_HELPERS
    + r"""
-- One call appends for one or more threads (the producer groups a bulk's threads by
-- bucket, or all of them on a standalone server): the fixed cost of a script call is
-- paid once per group instead of once per thread.
-- KEYS: 8 per thread: log meta sched dirty threads dd dd_expiry births
-- ARGV: dedupe_ms sched_ms n_threads, then per thread: ref n {delta_id payload fps}*n
--       (delta_id '' = no dedupe; fps: the index fingerprints of the ids the delta
--       mentions, 4 bytes each, in order)
-- -> per thread, in order: woke(0|1), then {version, new(0|1)} per delta
-- Every redis.call costs about a microsecond on top of its command: the common path
-- (no delta_id, flag already set) makes four per thread plus one per delta.
local dedupe_ms, sched_ms, threads = tonumber(ARGV[1]), ARGV[2], tonumber(ARGV[3])
local now = false
local out = {}

local function ingest(k, ref, n, a)
  local log, meta, sched, dirty, all, dd, ddx, births = KEYS[k + 1], KEYS[k + 2],
    KEYS[k + 3], KEYS[k + 4], KEYS[k + 5], KEYS[k + 6], KEYS[k + 7], KEYS[k + 8]
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
        v = redis.call('XADD', log, '*', 'd', payload, 'f', ids)
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
  -- 'e' is new only on a thread's first append (or its first after a delete): the
  -- thread is born, and takes its incarnation (see fence()).
  if redis.call('HSET', meta, 'e', added) == 1 then
    redis.call('SADD', all, ref)
    -- 'b': its first entry. A log that no longer starts there lost entries, and a
    -- version before it is no state of this incarnation (see PREFIX).
    redis.call('HSET', meta, 'i', redis.call('INCR', births), 'b', first)
  end
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
  ingest(8 * t, ref, n, a + 2)
  a = a + 2 + 3 * n
end
return out
"""
)

HEAD: Final = r"""
-- The first step of reading batches: the meta fields a read needs, of many threads in
-- one call (a plain HMGET each would cost the worker a reply each). Read-only.
-- KEYS: meta per thread   -> per thread {c, g, i, n, q} (nil where unset)
local all = {}
for t = 1, #KEYS do all[t] = redis.call('HMGET', KEYS[t], 'c', 'g', 'i', 'n', 'q') end
return all
"""

CANDIDATES: Final = (
    _LUA_HELPERS
    + _LUA_STATE
    + r"""
-- The second step of reading a batch, for one or more threads (a worker reads the
-- threads' meta (HEAD) and their next log entries (one plain XREAD) first: an XRANGE
-- inside a script makes a Lua string of every field of every entry, and that was half
-- of the read's server time). Counts the read as an attempt (failures
-- quarantine a thread after a limit), and finds the candidate positions of the
-- fingerprints of the ids the batch mentions, with the pages holding them.
-- Unconfirmed: the worker checks each against the id in its record, and rewrites the
-- pages it edits itself, so the commit writes them without reading them (they cannot
-- change unless the fence does).
-- KEYS: 3 per thread: meta pages index    ARGV: 2 per thread: the fence the worker read
-- with the entries, and the fingerprints (4 bytes each, distinct; '' for none)
-- -> per thread: {-1} when the fence moved since (a commit, a rebuild, a delete: the
--    worker reads again, and a deleted thread's meta is not written back), else
--    {attempts, positions_per_page, c, fingerprint1, position1, ..., fingerprintC,
--     positionC, page_number, page, ...}
local function candidates(k, read_fence, mentioned)
  local meta = redis.call('HMGET', KEYS[k + 1], 'ib', 'pp', 'c', 'g', 'i')
  if fence(meta[3], meta[4], meta[5]) ~= read_fence then return {-1} end
  local per = tonumber(meta[2] or MAX_PAGE_RECORDS)
  local out = {redis.call('HINCRBY', KEYS[k + 1], 'a', 1), per, 0}
  local fps = {}
  for at = 1, #mentioned - 3, 4 do fps[#fps + 1] = string.sub(mentioned, at, at + 3) end
  if #fps == 0 then return out end
  local match = matcher(KEYS[k + 3], tonumber(meta[1] or '0'), fps)
  local numbers, seen = {}, {}
  for _, fpb in ipairs(fps) do
    for _, pos in ipairs(match(fpb)) do
      out[#out + 1] = fpb
      out[#out + 1] = pos
      out[3] = out[3] + 1
      local number = page_of(pos, per)
      if not seen[number] then
        seen[number] = true
        numbers[#numbers + 1] = number
      end
    end
  end
  local got = read_fields(KEYS[k + 2], numbers)
  for _, number in ipairs(numbers) do
    out[#out + 1] = number
    out[#out + 1] = got[number]
  end
  return out
end

local all = {}
for t = 0, #ARGV / 2 - 1 do all[t + 1] = candidates(3 * t, ARGV[2 * t + 1], ARGV[2 * t + 2]) end
return all
"""
)

COMMIT: Final = (
    _LUA_HELPERS
    + _LUA_STATE
    + r"""
-- Compare-and-set commits of one or more threads (a drain round commits all of a
-- task's threads with one call; each thread's commit stands or fails on its own).
-- KEYS: 6 per thread: meta pages index log sched dirty
-- ARGV: per thread: count, then its count arguments:
--       fence new_cursor next_position cleared n_removed n_pages n_inserts
--       retention_ms sched_ms ref n_entries
--       {fingerprint position}*n_removed {page_number page}*n_pages
--       {fingerprint position record}*n_inserts (ascending, past every stored position)
--       The pages are whole: the stored ones the batch read, rewritten by the worker
--       ('' = emptied); the fence is what makes them current.
-- -> per thread: {0} when the fence moved (a stale or concurrent worker: re-read),
--    else {1, more, now_ms}
local now = false

local function commit(k, a)   -- KEYS[k + i] and ARGV[a + i] are the thread's i-th
  local meta, pages, index, log, sched, dirty =
    KEYS[k + 1], KEYS[k + 2], KEYS[k + 3], KEYS[k + 4], KEYS[k + 5], KEYS[k + 6]
  -- The fence, the state's shape and the applied count in one read (a redis.call
  -- costs more than the fields it returns).
  local state = redis.call('HMGET', meta, 'c', 'g', 'i', 'm', 'ib', 'pp', 'k')
  if fence(state[1], state[2], state[3]) ~= ARGV[a + 1] then return {0} end
  local new_cursor = ARGV[a + 2]
  local n_removed, n_pages, n_inserts =
    tonumber(ARGV[a + 5]), tonumber(ARGV[a + 6]), tonumber(ARGV[a + 7])
  local cleared = ARGV[a + 4] == '1'
  local gone, written, dropped = {}, {}, {}
  local base = a + 12
  for i = base, base + 2 * n_removed - 1, 2 do
    gone[#gone + 1] = ARGV[i]
    gone[#gone + 1] = tonumber(ARGV[i + 1])
  end
  base = base + 2 * n_removed
  for i = base, base + 2 * n_pages - 1, 2 do
    if ARGV[i + 1] == '' then
      dropped[#dropped + 1] = ARGV[i]
    else
      written[#written + 1] = ARGV[i]
      written[#written + 1] = ARGV[i + 1]
    end
  end
  local recs, added = inserts_of(base + 2 * n_pages, n_inserts)
  local count, buckets = tonumber(state[4] or '0'), tonumber(state[5] or '0')
  local per = tonumber(state[6] or MAX_PAGE_RECORDS)
  if cleared then   -- the batch starts from nothing: it lists no edits of stored records
    redis.call('DEL', pages, index)
    gone, count, buckets, written, dropped = {}, 0, 0, {}, {}
  end
  count = count - #gone / 2
  if count == 0 and #recs > 0 then per = positions_per_page(recs) end   -- no page left
  append_pages(pages, per, recs, written, dropped)
  write_fields(pages, written, dropped)
  count = count + n_inserts
  if #gone > 0 or #added > 0 then buckets = edit_index(index, added, gone, buckets, count) end
  now = now or now_ms()
  local applied = string.format('%d', tonumber(state[7] or '0') + tonumber(ARGV[a + 11]))
  redis.call('HSET', meta, 'c', new_cursor, 'n', ARGV[a + 3], 't', now, 'a', 0, 'm', count,
             'ib', buckets, 'pp', per, 'k', applied)
  local threshold = after(new_cursor)
  local retention = tonumber(ARGV[a + 8])
  if retention > 0 then
    local keep_from = (now - retention) .. '-0'
    if ms_of(keep_from) < ms_of(threshold) then threshold = keep_from end
  end
  -- Nothing records the trim: whether the log still holds the whole thread is read off
  -- the stream itself (entries added against entries kept and skipped: see PREFIX),
  -- which costs this hot path nothing and no writer can forget to do.
  redis.call('XTRIM', log, 'MINID', threshold)
  if has_backlog(log, new_cursor) then
    redis.call('PEXPIRE', sched, ARGV[a + 9])
    return {1, 1, now}
  end
  redis.call('DEL', sched)
  redis.call('ZREM', dirty, ARGV[a + 10])
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

#: Skipped entries a thread's meta lists (``sk``, the latest; ``sc`` counts them all):
#: enough to see what an operator dropped, bounded however often it happens.
SKIPPED_KEPT: Final = 20

RETRY: Final = (
    _LUA_HELPERS
    + r"""
-- An operator's retry: lift the quarantine and wake the thread; with skip, drop the
-- entry the drain failed on ('qe') wherever it lies after the cursor, and record it.
-- KEYS: meta sched dirty quarantine log   ARGV: ref sched_ms skip('1'|'0') keep
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
    + _LUA_STATE
    + r"""
-- KEYS: meta pages index
-- ARGV: mode('all'|'after'|'before') anchor_id limit(-1 = all) anchor_fingerprint
-- -> {} when never written, else {cursor, total, anchor_found, anchor_position,
--     page_number, page, ...}: the pages that hold the first `limit + 1` messages of
-- the range (all of them for limit -1), in no particular order; the reader orders them
-- by number and slices the records (core/pages.py), so the server only walks record
-- headers, and only when a limit asks it to.
if redis.call('EXISTS', KEYS[1]) == 0 then return {} end
local mode, anchor, limit = ARGV[1], ARGV[2], tonumber(ARGV[3])
local meta = redis.call('HMGET', KEYS[1], 'c', 'm', 'ib', 'pp')
local cursor, total = meta[1] or '0-0', tonumber(meta[2] or '0')
local per = tonumber(meta[4] or MAX_PAGE_RECORDS)
local from = -1
if mode ~= 'all' then
  from = finder(KEYS[2], KEYS[3], tonumber(meta[3] or '0'), per)(anchor, ARGV[4])
  if not from then return {cursor, total, 0, -1} end
end
local out = {cursor, total, 1, from}
if limit < 0 and mode == 'all' then
  for _, v in ipairs(redis.call('HGETALL', KEYS[2])) do out[#out + 1] = v end
  return out
end
-- The page numbers in the range, nearest the anchor first.
local numbers = {}
for i, v in ipairs(redis.call('HKEYS', KEYS[2])) do numbers[i] = tonumber(v) end
table.sort(numbers)
local ordered = {}
if mode == 'before' then
  for i = #numbers, 1, -1 do
    if numbers[i] <= page_of(from, per) then ordered[#ordered + 1] = numbers[i] end
  end
else
  for _, number in ipairs(numbers) do
    if mode == 'all' or number >= page_of(from, per) then ordered[#ordered + 1] = number end
  end
end
local function count(page)   -- records of the page inside the range
  local c, at, n = 0, 1, #page
  while at <= n do
    local p, il, bl = struct.unpack('>I4I4I4', page, at)
    if mode == 'all' or (mode == 'after' and p > from) or (mode == 'before' and p < from) then
      c = c + 1
    end
    at = at + 12 + il + bl
  end
  return c
end
local got = 0
for i = 1, #ordered, 16 do
  local part = {unpack(ordered, i, math.min(i + 15, #ordered))}
  local pages = redis.call('HMGET', KEYS[2], unpack(part))
  for j, page in ipairs(pages) do
    out[#out + 1] = part[j]
    out[#out + 1] = page
    if limit >= 0 then got = got + count(page) end
  end
  if limit >= 0 and got > limit then break end
end
return out
"""
)

LOOKUP: Final = (
    _LUA_HELPERS
    + _LUA_STATE
    + r"""
-- KEYS: meta pages index   ARGV: {id fingerprint}*
-- -> {{id, position}* for the ids the thread holds, {page_number, page}* holding them,
--     positions_per_page}
local meta = redis.call('HMGET', KEYS[1], 'ib', 'pp')
local buckets, per = tonumber(meta[1] or '0'), tonumber(meta[2] or MAX_PAGE_RECORDS)
local find, found, held, seen = finder(KEYS[2], KEYS[3], buckets, per), {}, {}, {}
for i = 1, #ARGV, 2 do
  local pos, page = find(ARGV[i], ARGV[i + 1])
  if pos then
    found[#found + 1] = ARGV[i]
    found[#found + 1] = pos
    local number = page_of(pos, per)
    if not seen[number] then
      seen[number] = true
      held[#held + 1] = number
      held[#held + 1] = page
    end
  end
end
return {found, held, per}
"""
)

DELETE: Final = r"""
-- KEYS: log meta pages index sched dd dd_expiry dirty quarantine threads   ARGV: ref
local existed = redis.call('EXISTS', KEYS[2])
redis.call('DEL', KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5], KEYS[6], KEYS[7])
redis.call('ZREM', KEYS[8], ARGV[1])
redis.call('ZREM', KEYS[9], ARGV[1])
redis.call('SREM', KEYS[10], ARGV[1])
return existed
"""

STATUS: Final = r"""
-- KEYS: meta log dirty   ARGV: ref
-- -> {} when never written, else {c, e, t, a, q, qe, applied, added, messages, dirty_since,
--     skipped (JSON)}
if redis.call('EXISTS', KEYS[1]) == 0 then return {} end
local m = redis.call('HMGET', KEYS[1], 'c', 'e', 't', 'a', 'q', 'qe', 'k', 'm', 'sk')
local added = 0
if redis.call('EXISTS', KEYS[2]) == 1 then
  local info = redis.call('XINFO', 'STREAM', KEYS[2])
  for i = 1, #info, 2 do
    if info[i] == 'entries-added' then added = info[i + 1] end
  end
end
return {m[1] or '0-0', m[2] or '0-0', m[3] or '', m[4] or '0', m[5] or '', m[6] or '',
        m[7] or '0', added, m[8] or '0', redis.call('ZSCORE', KEYS[3], ARGV[1]) or '',
        m[9] or '[]'}
"""

BACKLOG: Final = r"""
-- The status listing of one bucket: its threads with a backlog and its quarantined
-- threads, each listed with its backlog and version as this same call reads them (a
-- list read first and statuses read after it showed threads drained in between with a
-- backlog of 0). Read-only.
-- KEYS: dirty quarantine (the bucket's)
-- ARGV: limit, then the text before and after the ref in a thread's meta key and log key
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
"""

REBUILD: Final = (
    _LUA_HELPERS
    + _LUA_STATE
    + r"""
-- Replace a thread's state with a replayed one, fenced like any commit.
-- KEYS: meta pages index
-- ARGV: fence next_position n {fingerprint position record}*n (ascending)
-- -> 1 done, 0 the fence moved meanwhile (replay again): the whole fence, not only the
--    cursor, so that a thread deleted and written again since the replay's read (its
--    incarnation changed) is never given the old thread's state
if fence_of(KEYS[1]) ~= ARGV[1] then return 0 end
redis.call('DEL', KEYS[2], KEYS[3])
local n = tonumber(ARGV[3])
local recs, added = inserts_of(4, n)
local buckets, per = 0, MAX_PAGE_RECORDS   -- the index sized for n at once: no splits
if n > 0 then
  per = positions_per_page(recs)
  local written = {}
  append_pages(KEYS[2], per, recs, written, {})
  write_fields(KEYS[2], written, {})
  buckets = edit_index(KEYS[3], added, {}, math.ceil(n / BUCKET_ENTRIES), n)
end
-- 'g' changes with every rebuild: a drain that read before it cannot commit after it.
redis.call('HSET', KEYS[1], 'n', ARGV[2], 'm', n, 'ib', buckets, 'pp', per)
redis.call('HINCRBY', KEYS[1], 'g', 1)
return 1
"""
)

PREFIX: Final = (
    _LUA_HELPERS
    + r"""
-- One instant of a thread, to read a prefix of its log from: time travel, audit and
-- rebuild (workers/prefix.py reads the rest of the prefix in pages after it). Read-only.
-- KEYS: meta pages log
-- ARGV: mode ('travel' | 'audit' | 'replay'), upto (an entry id; 'audit' reads up to
--       the cursor), count (log entries to return with it; 0 for none)
-- -> {'missing'}: the thread does not exist (never written, or deleted)
--    {'unborn', b}: upto precedes b, the first entry of the thread's current
--       incarnation: no state of it ('travel', 'replay')
--    {'gone', c}: upto is before the cursor c and the log no longer holds the thread's
--       whole history: only the live state and what follows it can be served
--    {'live', c, g, i, first, b, entries, pages}: 'travel' at or after the cursor: the
--       live state (pages as {number, page}*) and the first `count` entries after the
--       cursor, up to upto
--    {'log', c, g, i, first, b, entries, pages}: the first `count` entries of the log up
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
"""
)

LOG_FENCE: Final = r"""
-- After a page of a prefix read (a plain XRANGE, workers/prefix.py): whether the thread
-- is still the incarnation it read, and where its log starts now. Read-only.
-- KEYS: meta log   -> {exists(0|1), incarnation or '', first entry id or ''}
local m = redis.call('HMGET', KEYS[1], 'e', 'i')
local first = redis.call('XRANGE', KEYS[2], '-', '+', 'COUNT', 1)[1]
return {m[1] and 1 or 0, m[2] or '', first and first[1] or ''}
"""

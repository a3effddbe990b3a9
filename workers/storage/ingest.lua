-- One call appends for one or more threads (the producer groups a bulk's threads by
-- bucket, or all of them on a standalone server): the fixed cost of a script call is
-- paid once per group instead of once per thread.
-- KEYS: meta   (the first thread's, naming the call's slot on a Cluster, where every
--       thread of a call shares one bucket; each thread's keys are named here, by
--       KEY.* from its tag and ref, and only those the thread's path touches)
-- ARGV: dedupe_ms sched_ms n_threads birth_token retention_ms feed_max_events
--       feed_max_age_ms feed_max_event_bytes ttl_ms commits(0|1) publish_always(0|1),
--       then per thread: ref tag n opts {delta_id payload fps records}*n (records only
--       when commits = 1: a stream's calls, which never commit, pass no more than before)
--       (delta_id '' = no dedupe; fps: the index fingerprints of the ids the delta
--       mentions, 4 bytes each, in order; opts '' or lines only_new(0|1), key, value
--       JSON, ...: the metadata a thread this call creates is born with, and 1 to
--       append only if the thread does not exist, a copy's, followed by the copy's
--       identity (hex, or nothing), or 2 and the version the thread's last append
--       must have made (nothing: the thread must not exist); records: '' or, for a
--       delta the call may commit (distinct ids, no chunk, no removal of everything),
--       its messages' records but for their positions, in order (pages.unplaced, a
--       removal's pages.unplaced_removal))
-- -> per thread, in order: woke(0|1, 2: committed here, or -1: only_new and the thread
--    exists, nothing written; -2: the thread's last append is not the one expected,
--    nothing written; 0 with the version it made for a copy retried), then
--    {version, new(0|1)} per delta
-- Every redis.call costs about a microsecond on top of its command: the common path
-- (no delta_id, flag already set) makes four per thread plus one per delta.
--
-- Committed here: when every delta of a thread in the call carries its records, the
-- thread has no backlog (no entry after its cursor: nothing waits for a worker) and
-- every id it removes is stored, each id is found as a worker finds it and the call
-- commits the deltas itself, as COMMIT would (write_commit): a stored id rewritten in
-- place, a new one at the next position, a removed one taken out; no wake-up, no
-- drain, visible on return. Anything else is appended for a worker, as before.
local dedupe_ms, sched_ms, threads = tonumber(ARGV[1]), ARGV[2], tonumber(ARGV[3])
-- A thread born in this call takes the call's token as its incarnation (see fence()):
-- 62 random bits, so no key has to remember the last one (a counter per bucket would outlive
-- every thread of it), and two incarnations of one thread come from two calls.
local birth_token = ARGV[4]
local retention_ms, max_events, max_age_ms, max_event_bytes, ttl_ms = tonumber(ARGV[5]),
  tonumber(ARGV[6]), tonumber(ARGV[7]), tonumber(ARGV[8]), tonumber(ARGV[9])
local may_commit = ARGV[10] == '1'
-- Every commit publishes on a Cluster (a listener may be on another node) and while
-- anyone listens by pattern here (PUBSUB NUMSUB counts channels' own subscribers).
local publish_always = ARGV[11] == '1' or (may_commit and redis.call('PUBSUB', 'NUMPAT') > 0)
local now = false
local out = {}
local STRIDE = may_commit and 4 or 3   -- ARGV per delta
-- A commit's keys and its write (write_commit's t and c): one table each for every
-- thread of the call, refilled: two new tables a thread cost a spread delta 1.8%
-- more instructions (callgrind).
local THREAD, COMMIT = {}, {}

-- A record's body length that marks a removal of its id (pages.REMOVAL: no body).
local REMOVAL = 4294967295

-- A page with its records at `edits`' positions replaced (a record) or dropped ('').
local function edit_records(page, edits)
  local parts, at, n = {}, 1, #page
  while at <= n do
    local p, il, bl = struct.unpack('>I4I4I4', page, at)
    local size = 16 + il + bl
    local e = edits[p]
    if e == nil then
      parts[#parts + 1] = string.sub(page, at, at + size - 1)
    elseif e ~= '' then
      parts[#parts + 1] = e
    end
    at = at + size
  end
  return table.concat(parts)
end

-- Who hears this commit's event: 'kept' when a follower marked the thread (its feed
-- keeps the event, which is published too), 'live' when only subscribers listen now,
-- else false, and no event is made (a PUBLISH reaches only those who listen as it
-- runs, so no listener misses one). See publish_always for when this is not counted.
local function heard(t)
  if redis.call('EXISTS', t.followed) == 1 then return 'kept' end
  if publish_always or redis.call('PUBSUB', 'NUMSUB', t.feed)[2] > 0 then return 'live' end
  return false
end

-- The thread's deltas committed here (see the head): whether they were. state: its
-- meta's COMMIT_READ fields, then 'q', 'n', 'e', read before this call appended;
-- last_append: the thread's last append, written with the commit ('e'). Each
-- message is found by its id as a worker finds it (a fingerprint's candidates,
-- confirmed against the id in the record at that position): a stored one is updated
-- in place, a new one appended at the next position, a removed one must be stored
-- (else the fold fails on it: the worker's, which names it).
local function commit_here(t, ref, state, entries, last_append)
  local items = {}   -- {fingerprint, id, tail or false (a removal), body offset}
  for _, e in ipairs(entries) do
    local fp, records = e[2], e[3]
    local at, j = 1, 0
    while at <= #records do
      local id_len, body_len = struct.unpack('>I4I4', records, at)
      local removal = body_len == REMOVAL
      local size = 12 + id_len + (removal and 0 or body_len)
      local id = string.sub(records, at + 12, at + 11 + id_len)
      -- A delta of one message is its one record: no copy of it (Lua hashes every
      -- byte of a string it makes). The body is cut out only for an event.
      local tail = not removal and
        (size == #records and records or string.sub(records, at, at + size - 1))
      items[#items + 1] = {#fp == 4 and fp or string.sub(fp, 4 * j + 1, 4 * j + 4), id,
                           tail, 13 + id_len}
      at, j = at + size, j + 1
    end
  end
  local seen, fps = {}, {}
  for i, item in ipairs(items) do   -- one id twice in the call: the worker's to fold
    if seen[item[1]] then return false end
    seen[item[1]] = true
    fps[i] = item[1]
  end
  local buckets, per = tonumber(state[5] or '0'), tonumber(state[6] or MAX_PAGE_RECORDS)
  local find, pages_read, buckets_read = finder(t.pages, t.index, buckets, per, fps)
  local hear = heard(t)
  local edits = {}   -- page number -> {position -> record or ''}
  local position = tonumber(state[11] or '0')
  local recs, added, gone, removed, upserts = {}, {}, {}, {}, {}
  for _, item in ipairs(items) do
    local at = find(item[2], item[1])
    if not item[3] then   -- a removal
      if not at then return false end
      local number = page_of(at, per)
      edits[number] = edits[number] or {}
      edits[number][at] = ''
      gone[#gone + 1] = item[1]
      gone[#gone + 1] = at
      if hear then removed[#removed + 1] = '\146' .. mp_str(item[2]) .. mp_uint(at) end
    else
      local record
      if at then   -- an update, in place
        record = struct.pack('>I4', at) .. item[3]
        local number = page_of(at, per)
        edits[number] = edits[number] or {}
        edits[number][at] = record
      else   -- an append
        at = position
        position = position + 1
        record = struct.pack('>I4', at) .. item[3]
        recs[#recs + 1] = at
        recs[#recs + 1] = record
        added[#added + 1] = item[1]
        added[#added + 1] = at
      end
      if hear then
        local body = string.sub(item[3], item[4])
        upserts[#upserts + 1] = {at, '\147' .. mp_uint(at) .. mp_str(item[2]) .. mp_bin(body)}
      end
    end
  end
  local written, dropped = {}, {}
  for number, changes in pairs(edits) do
    local page = edit_records(pages_read[number], changes)
    if page == '' then
      dropped[#dropped + 1] = number
    else
      written[#written + 1] = number
      written[#written + 1] = page
    end
  end
  local cursor = entries[#entries][1]
  local event = false
  if hear then
    table.sort(upserts, function(x, y) return x[1] < y[1] end)
    local encoded = {}
    for i, u in ipairs(upserts) do encoded[i] = u[2] end
    event = change_event(cursor, state[1] or '0-0', removed, encoded)
  end
  now = now or now_ms()
  -- Never committed before it was appended: TIME and the stream's id can be a
  -- millisecond apart either way, and the TTL counts from the later of the two.
  local at_ms = math.max(now, ms_of(cursor))
  local c = COMMIT
  c.cursor, c.next_position, c.cleared, c.gone = cursor, position, false, gone
  c.written, c.dropped, c.recs, c.added = written, dropped, recs, added
  c.retention_ms, c.sched_ms, c.ref, c.applied = retention_ms, 0, ref, #entries
  c.max_events = hear == 'kept' and #event <= max_event_bytes and max_events or 0
  c.max_age_ms, c.event, c.marked, c.ttl_ms = max_age_ms, event, hear == 'kept', ttl_ms
  c.now, c.settled, c.buckets_read, c.last_append = at_ms, true, buckets_read, last_append
  c.stored_buckets, c.stored_per = buckets, per
  write_commit(t, state, c)
  return true
end

local function ingest(ref, tag, n, opts, a)
  local log, meta = KEY.log(tag, ref), KEY.meta(tag, ref)
  local changes, copy_identity = false, ''
  if opts ~= '' then   -- rare: a new thread's metadata, a copy
    changes = {}
    local at = 1
    while true do
      local nl = string.find(opts, '\n', at, true)
      changes[#changes + 1] = string.sub(opts, at, (nl or 0) - 1)
      if not nl then break end
      at = nl + 1
    end
    -- A copy: its first line is '1' and the copy's identity (a digest of its source
    -- and delta_id, '' for none), kept in the meta hash ('cp') of the thread it made,
    -- never in the appends' delta_ids: a retry after its answer was lost finds it and
    -- is answered with the version it made ('b'); any other copy onto an existing
    -- thread is refused, whatever delta_ids the thread's appends used.
    if string.sub(changes[1], 1, 1) == '1' then
      copy_identity = string.sub(changes[1], 2)
      if redis.call('EXISTS', meta) == 1 then
        local made = copy_identity ~= '' and
          redis.call('HGET', meta, 'cp') == copy_identity and redis.call('HGET', meta, 'b')
        out[#out + 1] = made and 0 or -1
        for i = 1, n do
          out[#out + 1] = made or ''
          out[#out + 1] = 0
        end
        return
      end
    end
    -- Conditional: its first line is '2' and the version the thread's last append
    -- must have made ('e'), else nothing is written (-2): a checkpoint's messages
    -- appended as a change only onto the state they change (ThreadfoldSaver).
    if string.sub(changes[1], 1, 1) == '2' and
        (redis.call('HGET', meta, 'e') or '') ~= string.sub(changes[1], 2) then
      out[#out + 1] = -2
      for i = 1, n do
        out[#out + 1] = ''
        out[#out + 1] = 0
      end
      return
    end
    table.remove(changes, 1)
  end
  local deduping, here = false, may_commit
  for i = 0, n - 1 do
    if ARGV[a + STRIDE * i] ~= '' then deduping = true end
    if here and ARGV[a + 3 + STRIDE * i] == '' then here = false end
  end
  local state = false
  if here then   -- nothing after the cursor: read off the log itself, as COMMIT does,
    -- so an entry some other writer added (a poison one, by hand) is waited on too
    state = redis.call('HMGET', meta, 'c', 'g', 'i', 'm', 'ib', 'pp', 'k', 'x', 'pn',
                       'q', 'n', 'e')
    here = not state[10] and not has_backlog(log, state[1] or '0-0')
  end
  local entries = {}
  local dd, ddx
  if deduping then
    dd, ddx = KEY.dedupe(tag, ref), KEY.dedupe_expiry(tag, ref)
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
    local at = a + STRIDE * i
    local delta_id, payload, ids = ARGV[at], ARGV[at + 1], ARGV[at + 2]
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
      if here then entries[#entries + 1] = {v, ids, ARGV[at + 3]} end
    end
  end
  if not added then return end
  -- 'e' is new only on a thread's first append (or its first after a delete): the
  -- thread is born, and takes its incarnation (see fence()). A thread this call may
  -- commit read 'e' with its state: its commit writes it, with the rest of the meta.
  local unwritten, new
  if here then
    unwritten, new = added, not state[12]
  else
    new = redis.call('HSET', meta, 'e', added) == 1
  end
  if new then
    redis.call('SADD', KEY.threads(tag), ref)
    -- 'b': its first entry. A log that no longer starts there lost entries, and a
    -- version before it is no state of this incarnation (see PREFIX).
    redis.call('HSET', meta, 'i', birth_token, 'b', first, 'e', added)
    unwritten = false
    if copy_identity ~= '' then redis.call('HSET', meta, 'cp', copy_identity) end
    born(meta, ref, first, changes)
  end
  if recorded and dedupe_ms > 0 then
    redis.call('PEXPIRE', dd, dedupe_ms)
    redis.call('PEXPIRE', ddx, dedupe_ms)
  end
  -- A set flag implies the thread is already in its bucket's dirty set (ingest and
  -- retry add it before setting the flag; only a commit without backlog or a
  -- quarantine removes it, and they clear the flag with it). A quarantined thread
  -- stays out of the dirty set until an operator retries it.
  local t = THREAD
  if here then   -- (a commit here never reaches write_commit's sched and dirty)
    t.meta, t.pages, t.index, t.log = meta, KEY.pages(tag, ref), KEY.index(tag, ref), log
    t.feed, t.active = KEY.feed(tag, ref), KEY.active(tag, tenant_of(ref))
    t.expiry, t.followed = KEY.expiry(tag), KEY.followed(tag, ref)
  end
  if here and commit_here(t, ref, state, entries, unwritten) then
    out[woke] = 2
    return
  end
  if unwritten then redis.call('HSET', meta, 'e', unwritten) end
  local quarantined = redis.call('HGET', meta, 'q')
  if not quarantined and redis.call('SET', KEY.sched(tag, ref), '1', 'NX', 'PX', sched_ms) then
    redis.call('ZADD', KEY.dirty(tag), 'NX', ms_of(first), ref)
    out[woke] = 1
  end
end

local a = 12
for t = 0, threads - 1 do
  local n = tonumber(ARGV[a + 2])
  ingest(ARGV[a], ARGV[a + 1], n, ARGV[a + 3], a + 4)
  a = a + 4 + STRIDE * n
end
return out

-- A commit's writes, once the caller knows it stands: COMMIT's after its compare-and-set
-- (a worker folded the batch), INGEST's when it commits a thread's deltas itself (see
-- ingest.lua). One function, so the two cannot write a version differently.

-- The fields of the meta hash a commit reads first (COMMIT_READ[i] is state[i] below).
local COMMIT_READ = {'c', 'g', 'i', 'm', 'ib', 'pp', 'k', 'x', 'pn'}

-- The change event of the version just committed: kept in the thread's feed (entry id =
-- the version; the last max_events exactly, none older than max_age_ms, and the key
-- gone max_age_ms after the thread's last commit, so an idle thread keeps no feed) for
-- followers that resume, and published on the feed's channel for those that follow
-- live. Only a commit appends and every version it commits is past the thread's
-- cursor, so the id is past the feed's last; should it not be (a clock stepped back
-- across a delete), the feed starts again: followers see the chain break and read a
-- snapshot, where an error here would leave the state written and the commit unanswered.
local function publish(feed, version, prev, event, max_events, max_age_ms, at_ms)
  if max_events > 0 then
    local added = redis.pcall('XADD', feed, 'MAXLEN', max_events, version,
                              'p', prev, 'e', event)
    if type(added) == 'table' and added.err then
      redis.call('DEL', feed)
      redis.call('XADD', feed, version, 'p', prev, 'e', event)
    end
    if max_age_ms > 0 then
      redis.call('XTRIM', feed, 'MINID', (at_ms - max_age_ms) .. '-0')
      redis.call('PEXPIRE', feed, max_age_ms)
    end
  end
  redis.call('PUBLISH', feed, event)
end

-- The last commit time written, and its text: a call's commits mostly share their
-- millisecond, and a string.format costs ~1.3k instructions.
local last_now, last_now_s = false, false

-- Write a commit. t: the thread's keys {meta, pages, index, log, sched, dirty, feed,
-- active, expiry, followed}; state: its meta's COMMIT_READ fields, read by the caller;
-- c: the commit {cursor, next_position, cleared, gone, written, dropped, recs, added,
-- retention_ms, sched_ms, ref, applied, max_events, max_age_ms, event, marked, ttl_ms,
-- now, settled, buckets_read, last_append, stored_buckets, stored_per}: gone
-- {fingerprint, position}* of removed records, written and dropped the pages
-- rewritten whole ('' = emptied), recs
-- {position, record}* and added {fingerprint, position}* the records appended
-- (ascending, past every stored position); event: the change event, or false when
-- nobody hears it; marked: the caller found the thread marked (see follow.lua);
-- settled: the caller knows no entry follows the new cursor; buckets_read: the index
-- buckets the caller read (a finder's), or nil; last_append: the thread's last append
-- ('e') when the caller has not written it yet, or nil; stored_buckets, stored_per:
-- state[5] and state[6] as numbers, when the caller has them (else nil).
-- -> {1, more, now}
local function write_commit(t, state, c)
  local gone, written, dropped, recs = c.gone, c.written, c.dropped, c.recs
  -- The stored shape as numbers once: a tonumber of a string is a strtod, ~1k
  -- instructions (a caller that converted them already passes them in c).
  local stored_buckets = c.stored_buckets or tonumber(state[5] or '0')
  local stored_per = c.stored_per or tonumber(state[6] or MAX_PAGE_RECORDS)
  local count, buckets, per = tonumber(state[4] or '0'), stored_buckets, stored_per
  if c.cleared then   -- the batch starts from nothing: it lists no edits of stored records
    redis.call('DEL', t.pages, t.index)
    gone, count, buckets, written, dropped = {}, 0, 0, {}, {}
  end
  count = count - #gone / 2
  if count == 0 and #recs > 0 then per = positions_per_page(recs) end   -- no page left
  append_pages(t.pages, per, recs, written, dropped)
  write_fields(t.pages, written, dropped)
  count = count + #recs / 2
  if #gone > 0 or #c.added > 0 then
    buckets = edit_index(t.index, c.added, gone, buckets, count, not c.cleared and c.buckets_read)
  end
  local now = c.now
  -- Numbers go to Redis as strings made here: Redis formats a Lua number with
  -- snprintf('%.17g'), which costs several times more (callgrind).
  local now_s = now == last_now and last_now_s or int(now)
  last_now, last_now_s = now, now_s
  local applied = int(tonumber(state[7] or '0') + c.applied)
  local buckets_s = (buckets == stored_buckets and state[5]) or int(buckets)
  local per_s = (per == stored_per and state[6]) or int(per)
  -- Two calls, not one built from a table: the table and its unpack cost a spread delta
  -- 1.4% more instructions (callgrind).
  if c.last_append then
    redis.call('HSET', t.meta, 'c', c.cursor, 'n', int(c.next_position), 't', now_s,
               'a', '0', 'm', int(count), 'ib', buckets_s, 'pp', per_s, 'k', applied,
               'e', c.last_append)
  else
    redis.call('HSET', t.meta, 'c', c.cursor, 'n', int(c.next_position), 't', now_s,
               'a', '0', 'm', int(count), 'ib', buckets_s, 'pp', per_s, 'k', applied)
  end
  local threshold = after(c.cursor)
  if c.retention_ms > 0 then
    local keep_from = (now - c.retention_ms) .. '-0'
    if ms_of(keep_from) < ms_of(threshold) then threshold = keep_from end
  end
  -- Nothing records the trim: whether the log still holds the whole thread is read off
  -- the stream itself (entries added against entries kept and skipped: see PREFIX),
  -- which costs this hot path nothing and no writer can forget to do.
  redis.call('XTRIM', t.log, 'MINID', threshold)
  -- A thread no follower marked (see follow.lua) keeps no events: a live follower hears
  -- them all, and one that resumes reads a snapshot, as past a trimmed feed. A caller
  -- that read the mark itself says so (marked); one that made no event (INGEST's, when
  -- nobody hears it) publishes none.
  if c.event then
    local kept = c.max_events
    if kept > 0 and not c.marked and redis.call('EXISTS', t.followed) == 0 then kept = 0 end
    publish(t.feed, c.cursor, state[1] or '0-0', c.event, kept, c.max_age_ms, now)
  end
  redis.call('ZADD', t.active, now_s, c.ref)
  -- A commit is the thread's activity: its TTL restarts (the sweep skips a thread
  -- with a backlog, so an append not yet committed keeps it too).
  local ttl = ttl_of(state[8], state[9], c.ttl_ms)
  if ttl > 0 then redis.call('ZADD', t.expiry, int(now + ttl), c.ref) end
  if c.settled then return {1, 0, now} end   -- never flagged nor dirty (INGEST's)
  if has_backlog(t.log, c.cursor) then
    redis.call('PEXPIRE', t.sched, c.sched_ms)
    return {1, 1, now}
  end
  redis.call('DEL', t.sched)
  redis.call('ZREM', t.dirty, c.ref)
  return {1, 0, now}
end

-- The msgpack forms of the change event's parts (what feed_record.py's FeedEvent encodes
-- to: msgspec's smallest form of each, which its decoder reads back). Only INGEST builds
-- an event here: a worker's commit sends the one it encoded.
local function mp_len(n, small, small_max, tag8, tag16, tag32)
  if small and n <= small_max then return string.char(small + n) end
  if tag8 and n < 256 then return tag8 .. string.char(n) end
  if n < 65536 then return tag16 .. struct.pack('>I2', n) end
  return tag32 .. struct.pack('>I4', n)
end
local function mp_str(s) return mp_len(#s, 160, 31, '\217', '\218', '\219') .. s end
local function mp_bin(s) return mp_len(#s, false, 0, '\196', '\197', '\198') .. s end
local function mp_uint(v) return mp_len(v, 0, 127, '\204', '\205', '\206') end
local function mp_array(n) return mp_len(n, 144, 15, false, '\220', '\221') end

-- The change event of a commit without a reset: FeedEvent(version, prev, False,
-- [(id, position), ...], [(position, id, body), ...]); removed and upserts: their
-- encoded pairs and triples (the upserts in position order).
local function change_event(version, prev, removed, upserts)
  return '\149' .. mp_str(version) .. mp_str(prev) .. '\194'
         .. mp_array(#removed) .. table.concat(removed)
         .. mp_array(#upserts) .. table.concat(upserts)
end

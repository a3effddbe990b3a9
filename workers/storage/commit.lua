-- Compare-and-set commits of one or more threads (a drain round commits all of a
-- task's threads with one call; each thread's commit stands or fails on its own).
-- KEYS per thread: meta pages index log sched dirty feed active expiry
-- ARGV per thread: count, then its count arguments:
--       fence new_cursor next_position cleared n_removed n_pages n_inserts
--       retention_ms sched_ms ref n_entries feed_max_events feed_max_age_ms event ttl_ms
--       {fingerprint position}*n_removed {page_number page}*n_pages
--       {fingerprint position record}*n_inserts (ascending, past every stored position)
--       The pages are whole: the stored ones the batch read, rewritten by the worker
--       ('' = emptied); the fence is what makes them current.
-- -> per thread: {0} when the fence moved (a stale or concurrent worker: re-read),
--    else {1, more, now_ms}
local now = false

-- The change event of the version just committed: kept in the thread's feed (entry id =
-- the version; the last max_events exactly, none older than max_age_ms, and the key
-- gone max_age_ms after the thread's last commit, so an idle thread keeps no feed) for
-- followers that resume, and published on the feed's channel for those that follow
-- live. Only COMMIT appends and every version
-- it commits is past the thread's cursor, so the id is past the feed's last; should it
-- not be (a clock stepped back across a delete), the feed starts again: followers see
-- the chain break and read a snapshot, where an error here would leave the state
-- written and the commit unanswered.
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

local function commit(k, a)   -- KEYS[k + i] and ARGV[a + i] are the thread's i-th
  local meta, pages, index, log, sched, dirty, feed, active, expiry = KEYS[k + 1],
    KEYS[k + 2], KEYS[k + 3], KEYS[k + 4], KEYS[k + 5], KEYS[k + 6], KEYS[k + 7],
    KEYS[k + 8], KEYS[k + 9]
  -- The fence, the state's shape, the applied count and the TTL in one read (a
  -- redis.call costs more than the fields it returns).
  local state = redis.call('HMGET', meta, 'c', 'g', 'i', 'm', 'ib', 'pp', 'k', 'x', 'pn')
  if fence(state[1], state[2], state[3]) ~= ARGV[a + 1] then return {0} end
  local new_cursor = ARGV[a + 2]
  local n_removed, n_pages, n_inserts =
    tonumber(ARGV[a + 5]), tonumber(ARGV[a + 6]), tonumber(ARGV[a + 7])
  local cleared = ARGV[a + 4] == '1'
  local gone, written, dropped = {}, {}, {}
  local base = a + 16
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
  publish(feed, new_cursor, state[1] or '0-0', ARGV[a + 14],
          tonumber(ARGV[a + 12]), tonumber(ARGV[a + 13]), now)
  redis.call('ZADD', active, now, ARGV[a + 10])
  -- A commit is the thread's activity: its TTL restarts (the sweep skips a thread
  -- with a backlog, so an append not yet committed keeps it too).
  local ttl = ttl_of(state[8], state[9], tonumber(ARGV[a + 15]))
  if ttl > 0 then redis.call('ZADD', expiry, now + ttl, ARGV[a + 10]) end
  if has_backlog(log, new_cursor) then
    redis.call('PEXPIRE', sched, ARGV[a + 9])
    return {1, 1, now}
  end
  redis.call('DEL', sched)
  redis.call('ZREM', dirty, ARGV[a + 10])
  return {1, 0, now}
end

local all, a = {}, 0
for t = 0, #KEYS / 9 - 1 do
  all[t + 1] = commit(9 * t, a + 1)
  a = a + 1 + tonumber(ARGV[a + 1])
end
return all

-- Compare-and-set commits of one or more threads (a drain round commits all of a
-- task's threads with one call; each thread's commit stands or fails on its own).
-- KEYS per thread: meta pages index log sched dirty feed active expiry followed
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

local function commit(k, a)   -- KEYS[k + i] and ARGV[a + i] are the thread's i-th
  local t = {meta = KEYS[k + 1], pages = KEYS[k + 2], index = KEYS[k + 3], log = KEYS[k + 4],
             sched = KEYS[k + 5], dirty = KEYS[k + 6], feed = KEYS[k + 7],
             active = KEYS[k + 8], expiry = KEYS[k + 9], followed = KEYS[k + 10]}
  -- The fence, the state's shape, the applied count and the TTL in one read (a
  -- redis.call costs more than the fields it returns).
  local state = redis.call('HMGET', t.meta, unpack(COMMIT_READ))
  if fence(state[1], state[2], state[3]) ~= ARGV[a + 1] then return {0} end
  local n_removed, n_pages, n_inserts =
    tonumber(ARGV[a + 5]), tonumber(ARGV[a + 6]), tonumber(ARGV[a + 7])
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
  now = now or now_ms()
  return write_commit(t, state, {
    cursor = ARGV[a + 2], next_position = ARGV[a + 3], cleared = ARGV[a + 4] == '1',
    gone = gone, written = written, dropped = dropped, recs = recs, added = added,
    retention_ms = tonumber(ARGV[a + 8]), sched_ms = ARGV[a + 9], ref = ARGV[a + 10],
    applied = tonumber(ARGV[a + 11]), max_events = tonumber(ARGV[a + 12]),
    max_age_ms = tonumber(ARGV[a + 13]), event = ARGV[a + 14],
    ttl_ms = tonumber(ARGV[a + 15]), now = now, settled = false})
end

local all, a = {}, 0
for t = 0, #KEYS / 10 - 1 do
  all[t + 1] = commit(10 * t, a + 1)
  a = a + 1 + tonumber(ARGV[a + 1])
end
return all

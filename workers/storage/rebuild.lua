-- Replace a thread's state with a replayed one, fenced like any commit.
-- KEYS: meta pages index feed
-- ARGV: fence next_position n, then {fingerprint position record}*n (ascending)
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
-- No event says what a rebuild changed, and the version did not move: the feed is
-- dropped, 'fb' marks the version at which followers' states can no longer be trusted
-- (FEED answers a resume from it or before with a snapshot), and live followers are
-- told to read one now.
redis.call('DEL', KEYS[4])
redis.call('HSET', KEYS[1], 'fb', cursor_of(KEYS[1]))
redis.call('PUBLISH', KEYS[4], '')
return 1

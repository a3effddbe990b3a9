-- An operator's prune of some of a bucket's threads: each candidate that is not pinned,
-- idle for `idle_ms` or longer if given (by Redis's clock), and holding every given metadata value
-- is removed whole (forget) or, on a dry run, only counted. The checks and the removal
-- of a thread are one step, so a thread pinned or written meanwhile is kept.
-- KEYS: dirty quarantine threads expiry
-- ARGV: tag dry_run idle_ms n_terms {key value}* ref*
--       (dry_run '1' | '0'; idle_ms '' = any age)
-- -> the number of threads removed (or, dry, that would be)
local tag, dry = ARGV[1], ARGV[2] == '1'
local idle_before = ARGV[3] ~= '' and now_ms() - tonumber(ARGV[3]) or nil
local want, fields, first = wanted(4)
local n = 0
for a = first, #ARGV do
  local ref = ARGV[a]
  local m = redis.call('HMGET', KEY.meta(tag, ref), 't', 'e', 'pn')
  local ok = m[2] and not m[3]
  if ok and idle_before and last_active(m[1], m[2]) >= idle_before then ok = false end
  ok = ok and holds(tag, ref, want, fields)
  if ok then
    n = n + 1
    if not dry then forget(tag, ref, 'pruned', KEYS[1], KEYS[2], KEYS[3], KEYS[4]) end
  end
end
return n

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
local n_terms = tonumber(ARGV[4])
local fields, values = {}, {}
for i = 0, n_terms - 1 do
  fields[#fields + 1] = ARGV[5 + 2 * i]
  values[#values + 1] = ARGV[6 + 2 * i]
end
local n = 0
for a = 5 + 2 * n_terms, #ARGV do
  local ref = ARGV[a]
  local m = redis.call('HMGET', KEY.meta(tag, ref), 't', 'e', 'pn')
  local ok = m[2] and not m[3]
  if ok and idle_before and last_active(m[1], m[2]) >= idle_before then ok = false end
  if ok and n_terms > 0 then
    local got = redis.call('HMGET', KEY.metadata(tag, ref), unpack(fields))
    for i = 1, n_terms do
      if got[i] ~= values[i] then ok = false end
    end
  end
  if ok then
    n = n + 1
    if not dry then forget(tag, ref, 'pruned', KEYS[1], KEYS[2], KEYS[3], KEYS[4]) end
  end
end
return n

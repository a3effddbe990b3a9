-- LangGraph's delete_for_runs in one bucket of a tenant: every checkpoint whose
-- metadata names one of the runs, in every thread of the bucket that has one.
-- KEYS: run_index
-- ARGV: tag run*
-- -> how many checkpoints were removed
local tag, n = ARGV[1], 0
for i = 2, #ARGV do
  local run = ARGV[i]
  local lo, hi = '[' .. run .. '\n', '[' .. run .. '\n\255'
  for _, m in ipairs(redis.call('ZRANGEBYLEX', KEYS[1], lo, hi)) do
    local ref = string.sub(m, #run + 2)
    local K = cp_keys(tag, ref)
    local fields, all = {}, redis.call('HGETALL', K.runs)
    for j = 1, #all, 2 do
      if all[j + 1] == run then fields[#fields + 1] = all[j] end
    end
    if #fields > 0 then n = n + drop(K, ref, KEYS[1], fields) end
    redis.call('ZREM', KEYS[1], m)
  end
end
return n

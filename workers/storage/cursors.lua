-- Every given thread's cursor (meta 'c') in one call: a probe's poll of many threads
-- (bench/pipeline/latency.py). Read-only.
-- KEYS per thread: meta
-- -> per thread, its cursor or '' when unset
local out = {}
for i, k in ipairs(KEYS) do out[i] = redis.call('HGET', k, 'c') or '' end
return out

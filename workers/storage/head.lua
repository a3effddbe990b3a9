-- The first step of reading batches: the meta fields a read needs, of many threads in
-- one call (a plain HMGET each would cost the worker a reply each). Read-only.
-- KEYS per thread: meta
-- -> per thread {c, g, i, n, q} (nil where unset)
local all = {}
for t = 1, #KEYS do all[t] = redis.call('HMGET', KEYS[t], 'c', 'g', 'i', 'n', 'q') end
return all

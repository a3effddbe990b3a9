-- After a page of a prefix read (a plain XRANGE, workers/prefix.py): whether the thread
-- is still the incarnation it read, and where its log starts now. Read-only.
-- KEYS: meta log
-- -> {exists(0|1), incarnation or '', first entry id or ''}
local m = redis.call('HMGET', KEYS[1], 'e', 'i')
local first = redis.call('XRANGE', KEYS[2], '-', '+', 'COUNT', 1)[1]
return {m[1] and 1 or 0, m[2] or '', first and first[1] or ''}

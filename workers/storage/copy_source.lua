-- KEYS: meta pages metadata
-- -> {} when never written, else {state, metadata}: state as READ_STATE answers a whole
--    thread ({cursor, total, 1, -1, page_number, page, ...}), metadata {key, value JSON}*.
-- One read of both: a copy is the source's state and metadata at one version (read in
-- two calls, a copy racing a DELETE took the state and then no metadata).
if redis.call('EXISTS', KEYS[1]) == 0 then return {} end
local meta = redis.call('HMGET', KEYS[1], 'c', 'm')
local state = {meta[1] or '0-0', tonumber(meta[2] or '0'), 1, -1}
for _, v in ipairs(redis.call('HGETALL', KEYS[2])) do state[#state + 1] = v end
return {state, redis.call('HGETALL', KEYS[3])}

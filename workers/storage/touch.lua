-- A read restarts the thread's TTL (THREADFOLD_TTL_REFRESH_ON_READ): only a thread the
-- sweep lists, so a read never puts back a thread that was removed, nor one whose
-- backlog keeps it out of the list (its commit will).
-- KEYS: meta expiry
-- ARGV: ref default_ttl_ms
local m = redis.call('HMGET', KEYS[1], 'x', 'pn')
local lives = ttl_of(m[1], m[2], tonumber(ARGV[2]))
if lives > 0 then redis.call('ZADD', KEYS[2], 'XX', 'GT', now_ms() + lives, ARGV[1]) end
return 0

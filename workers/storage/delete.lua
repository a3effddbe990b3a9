-- KEYS: log meta pages index sched dedupe dedupe_expiry dirty quarantine threads
-- ARGV: ref
local existed = redis.call('EXISTS', KEYS[2])
redis.call('DEL', KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5], KEYS[6], KEYS[7])
redis.call('ZREM', KEYS[8], ARGV[1])
redis.call('ZREM', KEYS[9], ARGV[1])
redis.call('SREM', KEYS[10], ARGV[1])
return existed

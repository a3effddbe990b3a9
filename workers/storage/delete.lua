-- KEYS: log meta pages index sched dedupe dedupe_expiry dirty quarantine threads feed active
-- ARGV: ref
local existed = redis.call('EXISTS', KEYS[2])
redis.call('DEL', KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5], KEYS[6], KEYS[7], KEYS[11])
redis.call('ZREM', KEYS[8], ARGV[1])
redis.call('ZREM', KEYS[9], ARGV[1])
redis.call('SREM', KEYS[10], ARGV[1])
redis.call('ZREM', KEYS[12], ARGV[1])
-- Live followers read a snapshot now (of nothing, until the thread is written again).
redis.call('PUBLISH', KEYS[11], '')
return existed

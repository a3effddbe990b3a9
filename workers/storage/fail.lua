-- KEYS: meta sched dirty quarantine
-- ARGV: limit reason entry ref backoff_ms
-- -> 1 when the thread is now quarantined
local attempts = tonumber(redis.call('HGET', KEYS[1], 'a') or '0')
if attempts < tonumber(ARGV[1]) then
  redis.call('PEXPIRE', KEYS[2], ARGV[5])
  return 0
end
redis.call('HSET', KEYS[1], 'q', ARGV[2], 'qe', ARGV[3])
redis.call('ZREM', KEYS[3], ARGV[4])
redis.call('ZADD', KEYS[4], now_ms(), ARGV[4])
redis.call('DEL', KEYS[2])
return 1

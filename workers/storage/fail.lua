-- KEYS: meta sched dirty quarantine
-- ARGV: limit reason entry ref backoff_ms fence
-- -> 1 when the thread is now quarantined
-- The fence is the failed batch's (see fence()). When it moved since the read (a commit
-- took the thread on, a rebuild replaced its state, or the thread was deleted, and
-- perhaps written again), the failure belongs to a state that is gone: nothing is
-- written. A deleted thread's meta is not written back, nor a new incarnation
-- quarantined on its predecessor's entry; if the entry is still pending, the next read
-- meets it again.
if fence_of(KEYS[1]) ~= ARGV[6] then return 0 end
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

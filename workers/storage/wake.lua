-- The sweeper's check.
-- KEYS: meta log sched dirty
-- ARGV: ref sched_ms
-- -> 1 when the caller must send the wake-up (it now holds the flag)
if redis.call('HGET', KEYS[1], 'q') then return 0 end
if not has_backlog(KEYS[2], cursor_of(KEYS[1])) then
  redis.call('ZREM', KEYS[4], ARGV[1])
  return 0
end
if redis.call('SET', KEYS[3], '1', 'NX', 'PX', ARGV[2]) then return 1 end
return 0

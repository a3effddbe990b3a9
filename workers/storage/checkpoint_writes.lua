-- A task's pending writes on a checkpoint. A write is kept once per (task, index): a
-- retried task's writes do not replace the first ones, except the special writes
-- (a negative index: error, interrupt, resume, scheduled), which LangGraph replaces.
-- KEYS: checkpoint_writes checkpoint_write_order
-- ARGV: field {task_id idx write}*
local field = ARGV[1]
for i = 2, #ARGV, 3 do
  local member = field .. '\n' .. ARGV[i] .. '\n' .. ARGV[i + 1]
  if tonumber(ARGV[i + 1]) < 0 then
    redis.call('HSET', KEYS[1], member, ARGV[i + 2])
  else
    redis.call('HSETNX', KEYS[1], member, ARGV[i + 2])
  end
  redis.call('ZADD', KEYS[2], 0, member)
end
return 0

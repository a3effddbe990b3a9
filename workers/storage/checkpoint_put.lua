-- A checkpoint stored: its record, the channel values it adds, its place in the
-- thread's order and in the bucket's index of runs, and the thread's version at which
-- the thread holds its messages (given, else its parent's: a step that left the
-- messages alone).
-- KEYS: checkpoints checkpoint_order checkpoint_versions checkpoint_blobs checkpoint_writes checkpoint_write_order checkpoint_runs run_index
-- ARGV: ref field record version parent run {blob_field blob}*
--       (version, parent, run: '' for none)
-- -> the version recorded for the checkpoint ('' for none)
local K = declared(1)
local ref, field, record, version, parent, run = ARGV[1], ARGV[2], ARGV[3], ARGV[4],
  ARGV[5], ARGV[6]
if #ARGV > 6 then
  local pairs_ = {}
  for i = 7, #ARGV do pairs_[#pairs_ + 1] = ARGV[i] end
  chunked('HSET', K.blobs, pairs_, 2)
end
redis.call('HSET', K.cp, field, record)
redis.call('ZADD', K.order, 0, field)
if version == '' and parent ~= '' then
  version = redis.call('HGET', K.versions, parent) or ''
end
if version ~= '' then redis.call('HSET', K.versions, field, version) end
if run ~= '' then
  redis.call('HSET', K.runs, field, run)
  redis.call('ZADD', KEYS[8], 0, run .. '\n' .. ref)
end
return version

-- Checkpoints read whole (record, version, channel values, pending writes).
-- KEYS: checkpoints checkpoint_order checkpoint_versions checkpoint_blobs checkpoint_writes checkpoint_write_order checkpoint_runs run_index
-- ARGV: mode ...: 'latest' ns | 'pick' field* | 'page' ns before count | 'fields' |
--       'version' field (page: newest first, before '' for none, exclusive)
-- -> 'fields': every checkpoint field; 'version': the thread's version recorded for
--    the checkpoint, or nil; else one read_one answer per checkpoint found
local K = declared(1)
local mode = ARGV[1]
if mode == 'fields' then return redis.call('ZRANGE', K.order, 0, -1) end
if mode == 'version' then return redis.call('HGET', K.versions, ARGV[2]) end
local fields
if mode == 'latest' then
  fields = redis.call('ZREVRANGEBYLEX', K.order, '(' .. ARGV[2] .. '\n\255',
                      '[' .. ARGV[2] .. '\n', 'LIMIT', 0, 1)
elseif mode == 'page' then
  local top = ARGV[3] == '' and '(' .. ARGV[2] .. '\n\255' or '(' .. ARGV[2] .. '\n' .. ARGV[3]
  fields = redis.call('ZREVRANGEBYLEX', K.order, top, '[' .. ARGV[2] .. '\n', 'LIMIT', 0,
                      tonumber(ARGV[4]))
else
  fields = {}
  for i = 2, #ARGV do fields[#fields + 1] = ARGV[i] end
end
local out = {}
for _, f in ipairs(fields) do
  local one = read_one(K, f)
  if one then out[#out + 1] = one end
end
return out

-- A thread's checkpoints removed: the ones named, all but each namespace's latest
-- (LangGraph's prune 'keep_latest'), those of some runs, or all of them.
-- KEYS: checkpoints checkpoint_order checkpoint_versions checkpoint_blobs checkpoint_writes checkpoint_write_order checkpoint_runs run_index
-- ARGV: ref mode ...: 'fields' field* | 'latest' | 'runs' run* | 'all'
-- -> how many were removed
local K = declared(1)
local ref, mode = ARGV[1], ARGV[2]
local fields = {}
if mode == 'fields' then
  for i = 3, #ARGV do fields[#fields + 1] = ARGV[i] end
elseif mode == 'runs' then
  local wanted = {}
  for i = 3, #ARGV do wanted[ARGV[i]] = true end
  local all = redis.call('HGETALL', K.runs)
  for i = 1, #all, 2 do
    if wanted[all[i + 1]] then fields[#fields + 1] = all[i] end
  end
else
  local members = redis.call('ZRANGE', K.order, 0, -1)
  for i, f in ipairs(members) do
    -- In lexicographic order a namespace's checkpoints are together, its latest last.
    local ns = string.match(f, '^(.*)\n')
    local nxt = members[i + 1]
    if mode == 'all' or (nxt and string.match(nxt, '^(.*)\n') == ns) then
      fields[#fields + 1] = f
    end
  end
end
if #fields == 0 then return 0 end
return drop(K, ref, KEYS[8], fields)

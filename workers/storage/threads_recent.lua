-- One bucket's part of a tenant's threads list: its most recently active threads, each
-- with the time of its last activity (its last commit or its last append, the later).
-- Read-only.
-- KEYS: active dirty quarantine   (the bucket's; active is the tenant's own)
-- ARGV: limit scan tenant_prefix meta_before meta_after   (tenant_prefix is
--       '<tenant>/'; meta_before and meta_after the text around the ref in a meta key)
-- Candidates: the `limit` latest of the tenant's activity set (a commit writes it),
-- and the tenant's threads among the first `scan` of the bucket's dirty and quarantine
-- sets, which hold every thread with a backlog or in quarantine, of every tenant
-- (a thread never committed yet, or quarantined, is in no activity set). Their keys
-- carry the bucket's tag, so they live in the slot KEYS named (Redis Cluster).
-- -> {ref, activity_ms}* (at most `limit`, latest first)
local limit, scan, prefix = tonumber(ARGV[1]), tonumber(ARGV[2]), ARGV[3]
local score, refs = {}, {}
local function consider(ref, ms)
  if score[ref] == nil then refs[#refs + 1] = ref end
  if score[ref] == nil or ms > score[ref] then score[ref] = ms end
end
local top = redis.call('ZRANGE', KEYS[1], 0, limit - 1, 'REV', 'WITHSCORES')
for i = 1, #top, 2 do consider(top[i], tonumber(top[i + 1])) end
for n = 2, 3 do
  local listed = redis.call('ZRANGE', KEYS[n], 0, scan - 1)
  for _, ref in ipairs(listed) do
    if string.sub(ref, 1, #prefix) == prefix then
      local meta = ARGV[4] .. ref .. ARGV[5]
      local enqueued = redis.call('HGET', meta, 'e')   -- the last append's version
      if enqueued then consider(ref, tonumber(string.match(enqueued, '^(%d+)'))) end
    end
  end
end
table.sort(refs, function(a, b)
  if score[a] ~= score[b] then return score[a] > score[b] end
  return a < b
end)
local out = {}
for i = 1, math.min(limit, #refs) do
  out[#out + 1] = refs[i]
  out[#out + 1] = string.format('%d', score[refs[i]])
end
return out

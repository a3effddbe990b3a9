-- How many of a tenant's threads in one bucket hold every given metadata value and, if
-- asked, are in the given status. Read-only; costs the rarest term's threads (or, by
-- status alone, the bucket's threads with a backlog or in quarantine).
-- KEYS: active terms dirty quarantine
-- ARGV: tag tenant_prefix status n_terms {key value}*
local tag, prefix, status = ARGV[1], ARGV[2], ARGV[3]
local want, fields = wanted(4)
local function tenants(key, skip)   -- the tenant's refs of a bucket-wide set
  local n = 0
  for _, ref in ipairs(redis.call('ZRANGE', key, 0, -1)) do
    if string.sub(ref, 1, #prefix) == prefix and not (skip and redis.call('ZSCORE', skip, ref))
    then n = n + 1 end
  end
  return n
end
if #want == 0 then
  local all = redis.call('ZCARD', KEYS[1])
  if status == '' then return all end
  local quarantined = tenants(KEYS[4], nil)
  if status == 'quarantined' then return quarantined end
  local busy = tenants(KEYS[3], KEYS[4])
  if status == 'busy' then return busy end
  return all - busy - quarantined
end
local term, size = rarest(KEYS[2], want)
if size == 0 then return 0 end
local n = 0
for _, ref in ipairs(holders(KEYS[2], term)) do
  if holds(tag, ref, want, fields) and
      (status == '' or status_of(ref, KEYS[3], KEYS[4]) == status) then
    n = n + 1
  end
end
return n

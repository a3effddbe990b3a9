-- How many of a tenant's threads in one bucket hold every given metadata value and, if
-- asked, are in the given status. Read-only; costs the rarest term's threads (or, by
-- status alone, the bucket's threads with a backlog or in quarantine).
-- KEYS: active terms dirty quarantine
-- ARGV: tag tenant_prefix status n_terms {key value}*
local tag, prefix, status = ARGV[1], ARGV[2], ARGV[3]
local want, fields = {}, {}
for i = 0, tonumber(ARGV[4]) - 1 do
  want[#want + 1] = {ARGV[5 + 2 * i], ARGV[6 + 2 * i]}
  fields[#fields + 1] = ARGV[5 + 2 * i]
end
local function status_of(ref)
  if redis.call('ZSCORE', KEYS[4], ref) then return 'quarantined' end
  if redis.call('ZSCORE', KEYS[3], ref) then return 'busy' end
  return 'idle'
end
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
local rarest, size = nil, nil
for _, w in ipairs(want) do
  local t = term_of(w[1], w[2])
  local n = redis.call('ZLEXCOUNT', KEYS[2], '[' .. t, '[' .. t .. '\255')
  if size == nil or n < size then rarest, size = t, n end
end
if size == 0 then return 0 end
local n, cut = 0, #rarest + 1
for _, m in ipairs(redis.call('ZRANGE', KEYS[2], '[' .. rarest, '[' .. rarest .. '\255',
                              'BYLEX')) do
  local ref = string.sub(m, cut)
  local got = redis.call('HMGET', KEY.metadata(tag, ref), unpack(fields))
  local ok = true
  for i, w in ipairs(want) do
    if got[i] ~= w[2] then ok = false end
  end
  if ok and (status == '' or status_of(ref) == status) then n = n + 1 end
end
return n

-- A thread's lifecycle: its metadata and the index of it, its TTL, its removal. KEY
-- (prepended, built from threadfold.core.keys) names a thread's keys from its bucket's
-- tag and its ref, so a script that finds threads in a bucket's sets (the sweep, a
-- prune) reaches every key of each: they all carry the bucket's tag, so they are in the
-- slot of the keys the script declared (Redis Cluster).
local function tag_of(key)        -- '{tf:b0001}' of '{tf:b0001}:...'
  return string.match(key, '^%b{}')
end
local function tenant_of(ref)
  return string.match(ref, '^([^/]*)/')
end
local function term_of(key, value)
  return string.sub(redis.sha1hex(key .. '\n' .. value), 1, TERM_DIGITS)
end
-- The TTL (ms) a thread lives idle: none when pinned, its own ('x') if set, else the
-- deployment's default (0: forever).
local function ttl_of(own, pinned, default)
  if pinned then return 0 end
  if own then return tonumber(own) end
  return default
end
-- When a thread was last active: its last commit or its last append, the later.
local function last_active(committed, enqueued)
  local t = tonumber(committed or '0')
  if enqueued then t = math.max(t, ms_of(enqueued)) end
  return t
end

-- A search's metadata filter from ARGV[at]: n, then n key, value JSON pairs.
-- -> {{key, value}*}, {key*}, the index of the ARGV after it
local function wanted(at)
  local want, fields = {}, {}
  local n = tonumber(ARGV[at])
  for i = 0, n - 1 do
    want[#want + 1] = {ARGV[at + 1 + 2 * i], ARGV[at + 2 + 2 * i]}
    fields[#fields + 1] = ARGV[at + 1 + 2 * i]
  end
  return want, fields, at + 1 + 2 * n
end
-- Whether the thread holds every wanted value (a term names a candidate; this decides).
local function holds(tag, ref, want, fields)
  if #want == 0 then return true end
  local got = redis.call('HMGET', KEY.metadata(tag, ref), unpack(fields))
  for i, w in ipairs(want) do
    if got[i] ~= w[2] then return false end
  end
  return true
end
-- A thread's status in its bucket: quarantined, busy (a backlog), or idle.
local function status_of(ref, dirty, quarantine)
  if redis.call('ZSCORE', quarantine, ref) then return 'quarantined' end
  if redis.call('ZSCORE', dirty, ref) then return 'busy' end
  return 'idle'
end
-- The wanted term held by the fewest of the tenant's threads in the bucket, and how
-- many hold it.
local function rarest(terms, want)
  local best, size = nil, nil
  for _, w in ipairs(want) do
    local t = term_of(w[1], w[2])
    local n = redis.call('ZLEXCOUNT', terms, '[' .. t, '[' .. t .. '\255')
    if size == nil or n < size then best, size = t, n end
  end
  return best, size
end
-- The refs holding a term.
local function holders(terms, term)
  local refs, cut = {}, #term + 1
  for _, m in ipairs(redis.call('ZRANGE', terms, '[' .. term, '[' .. term .. '\255', 'BYLEX')) do
    refs[#refs + 1] = string.sub(m, cut)
  end
  return refs
end

-- Sets and deletes metadata keys (changes: key, value JSON, ... ; '' deletes), keeping
-- the tenant's terms index exact. The limits that depend on what is stored are checked
-- before anything is written: -> nil, or the limit a change would pass ('keys' or
-- 'bytes', and the count it would reach).
local function set_metadata(md, terms, ref, changes, max_keys, max_bytes)
  local stored = redis.call('HGETALL', md)
  local have, after = {}, {}
  for i = 1, #stored, 2 do
    have[stored[i]] = stored[i + 1]
    after[stored[i]] = stored[i + 1]
  end
  for i = 1, #changes, 2 do
    if changes[i + 1] == '' then after[changes[i]] = nil else after[changes[i]] = changes[i + 1] end
  end
  local n, bytes = 0, 0
  for k, v in pairs(after) do
    n = n + 1
    bytes = bytes + #k + #v
  end
  if n > max_keys then return {'keys', n} end
  if bytes > max_bytes then return {'bytes', bytes} end
  for i = 1, #changes, 2 do
    local k, v = changes[i], changes[i + 1]
    local old = have[k]
    if old ~= v then
      if old then redis.call('ZREM', terms, term_of(k, old) .. ref) end
      if v == '' then
        if old then redis.call('HDEL', md, k) end
      else
        redis.call('HSET', md, k, v)
        redis.call('ZADD', terms, 0, term_of(k, v) .. ref)
      end
      have[k] = v ~= '' and v or nil
    end
  end
  return nil
end

-- A thread born (its first append, or its first since it was removed): it is found by
-- creation and by activity from now on, and holds the metadata it was created with.
local function born(meta, ref, first, changes)
  local tag, tenant = tag_of(meta), tenant_of(ref)
  local at = ms_of(first)
  redis.call('ZADD', KEY.born(tag, tenant), at, ref)
  redis.call('ZADD', KEY.active(tag, tenant), 'NX', at, ref)
  if changes and #changes > 0 then
    set_metadata(KEY.metadata(tag, ref), KEY.terms(tag, tenant), ref, changes, 1e9, 1e9)
  end
end

-- A LangGraph saver's checkpoints of the thread, and the bucket's index of their runs.
local function forget_checkpoints(tag, ref)
  local index = KEY.run_index(tag, tenant_of(ref))
  for _, run in ipairs(redis.call('HVALS', KEY.checkpoint_runs(tag, ref))) do
    redis.call('ZREM', index, run .. '\n' .. ref)
  end
  redis.call('DEL', KEY.checkpoints(tag, ref), KEY.checkpoint_order(tag, ref),
             KEY.checkpoint_versions(tag, ref), KEY.checkpoint_blobs(tag, ref),
             KEY.checkpoint_writes(tag, ref), KEY.checkpoint_write_order(tag, ref),
             KEY.checkpoint_runs(tag, ref))
end

-- Every key of the thread, and its place in every index of its bucket, gone in one
-- step; its followers told why ('deleted:' .. reason, see feed_record.py). -> whether
-- it existed. The bucket's sets (KEYS of the caller): dirty, quarantine, threads, expiry.
local function forget(tag, ref, reason, dirty, quarantine, threads, expiry)
  local tenant = tenant_of(ref)
  local existed = redis.call('EXISTS', KEY.meta(tag, ref))
  local md = KEY.metadata(tag, ref)
  local stored = redis.call('HGETALL', md)
  if #stored > 0 then
    local terms = KEY.terms(tag, tenant)
    for i = 1, #stored, 2 do
      redis.call('ZREM', terms, term_of(stored[i], stored[i + 1]) .. ref)
    end
  end
  local feed = KEY.feed(tag, ref)
  redis.call('DEL', KEY.log(tag, ref), KEY.meta(tag, ref), KEY.pages(tag, ref),
             KEY.index(tag, ref), KEY.sched(tag, ref), KEY.dedupe(tag, ref),
             KEY.dedupe_expiry(tag, ref), feed, md)
  forget_checkpoints(tag, ref)
  redis.call('ZREM', dirty, ref)
  redis.call('ZREM', quarantine, ref)
  redis.call('ZREM', expiry, ref)
  redis.call('SREM', threads, ref)
  redis.call('ZREM', KEY.active(tag, tenant), ref)
  redis.call('ZREM', KEY.born(tag, tenant), ref)
  -- Live followers are told the thread is gone (until it is written again).
  redis.call('PUBLISH', feed, 'deleted:' .. reason)
  return existed
end

-- A LangGraph saver's checkpoints (threadfold.langgraph.ThreadfoldSaver): a record's
-- header, one checkpoint read whole, and a removal that leaves nothing behind.
--
-- A record is its header, a NUL, then the saver's bytes (opaque here). The header is
-- what a script needs: the parent's id, the run's id, the fields of the channel values
-- the checkpoint names, separated by \30 (and the fields by \31). Redis's cmsgpack
-- cannot read msgpack's bin type, so the header is text.
local function header_of(rec)
  local h = string.sub(rec, 1, string.find(rec, '\0', 1, true) - 1)
  local a = string.find(h, '\30', 1, true)
  local b = string.find(h, '\30', a + 1, true)
  local blobs = {}
  for f in string.gmatch(string.sub(h, b + 1), '[^\31]+') do blobs[#blobs + 1] = f end
  return string.sub(h, 1, a - 1), string.sub(h, a + 1, b - 1), blobs
end

-- A checkpoint's pending writes are the members of the write order after its field.
local function writes_range(field)
  return '[' .. field .. '\n', '[' .. field .. '\n\255'
end

-- K: the thread's checkpoint keys (cp order versions blobs writes worder runs).
-- -> {field, record, version or '', {blob values}, {write fields}, {writes}}, or false
local function read_one(K, field)
  local rec = redis.call('HGET', K.cp, field)
  if not rec then return false end
  local _, _, blobs = header_of(rec)
  local values = #blobs > 0 and redis.call('HMGET', K.blobs, unpack(blobs)) or {}
  local lo, hi = writes_range(field)
  local members = redis.call('ZRANGEBYLEX', K.worder, lo, hi)
  local writes = #members > 0 and redis.call('HMGET', K.writes, unpack(members)) or {}
  return {field, rec, redis.call('HGET', K.versions, field) or '', values, members, writes}
end

-- The checkpoints `fields` removed with their writes, the bucket's index of runs kept
-- exact (`index`), and the channel values no checkpoint left names. -> how many.
local function drop(K, ref, index, fields)
  local runs, n = {}, 0
  for _, f in ipairs(fields) do
    local run = redis.call('HGET', K.runs, f)
    if run then runs[run] = true end
    n = n + redis.call('HDEL', K.cp, f)
    redis.call('HDEL', K.versions, f)
    redis.call('HDEL', K.runs, f)
    redis.call('ZREM', K.order, f)
    local lo, hi = writes_range(f)
    local members = redis.call('ZRANGEBYLEX', K.worder, lo, hi)
    if #members > 0 then
      chunked('HDEL', K.writes, members, 1)
      redis.call('ZREMRANGEBYLEX', K.worder, lo, hi)
    end
  end
  if next(runs) then
    local left = {}
    for _, r in ipairs(redis.call('HVALS', K.runs)) do left[r] = true end
    for r in pairs(runs) do
      if not left[r] then redis.call('ZREM', index, r .. '\n' .. ref) end
    end
  end
  local live = {}
  for _, rec in ipairs(redis.call('HVALS', K.cp)) do
    local _, _, blobs = header_of(rec)
    for _, b in ipairs(blobs) do live[b] = true end
  end
  local dead = {}
  for _, b in ipairs(redis.call('HKEYS', K.blobs)) do
    if not live[b] then dead[#dead + 1] = b end
  end
  if #dead > 0 then chunked('HDEL', K.blobs, dead, 1) end
  return n
end

-- The checkpoint keys of a thread found by its ref (a bucket's script).
local function cp_keys(tag, ref)
  return {cp = KEY.checkpoints(tag, ref), order = KEY.checkpoint_order(tag, ref),
          versions = KEY.checkpoint_versions(tag, ref), blobs = KEY.checkpoint_blobs(tag, ref),
          writes = KEY.checkpoint_writes(tag, ref),
          worder = KEY.checkpoint_write_order(tag, ref), runs = KEY.checkpoint_runs(tag, ref)}
end

-- The thread's checkpoint keys as the caller declared them, in cp_keys' order.
local function declared(from)
  return {cp = KEYS[from], order = KEYS[from + 1], versions = KEYS[from + 2],
          blobs = KEYS[from + 3], writes = KEYS[from + 4], worder = KEYS[from + 5],
          runs = KEYS[from + 6]}
end

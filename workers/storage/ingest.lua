-- One call appends for one or more threads (the producer groups a bulk's threads by
-- bucket, or all of them on a standalone server): the fixed cost of a script call is
-- paid once per group instead of once per thread.
-- KEYS per thread: log meta sched dirty threads dedupe dedupe_expiry
-- ARGV: dedupe_ms sched_ms n_threads birth_token, then per thread: ref n opts {delta_id payload fps}*n
--       (delta_id '' = no dedupe; fps: the index fingerprints of the ids the delta
--       mentions, 4 bytes each, in order; opts '' or lines only_new(0|1), key, value
--       JSON, ...: the metadata a thread this call creates is born with, and 1 to
--       append only if the thread does not exist, a copy's)
-- -> per thread, in order: woke(0|1, or -1: only_new and the thread exists, nothing
--    written), then {version, new(0|1)} per delta
-- Every redis.call costs about a microsecond on top of its command: the common path
-- (no delta_id, flag already set) makes four per thread plus one per delta.
local dedupe_ms, sched_ms, threads = tonumber(ARGV[1]), ARGV[2], tonumber(ARGV[3])
-- A thread born in this call takes the call's token as its incarnation (see fence()):
-- 62 random bits, so no key has to remember the last one (a counter per bucket would outlive
-- every thread of it), and two incarnations of one thread come from two calls.
local birth_token = ARGV[4]
local now = false
local out = {}

local function ingest(k, ref, n, opts, a)
  local log, meta, sched, dirty, all, dd, ddx = KEYS[k + 1], KEYS[k + 2],
    KEYS[k + 3], KEYS[k + 4], KEYS[k + 5], KEYS[k + 6], KEYS[k + 7]
  local changes = false
  if opts ~= '' then   -- rare: a new thread's metadata, a copy
    changes = {}
    local at = 1
    while true do
      local nl = string.find(opts, '\n', at, true)
      changes[#changes + 1] = string.sub(opts, at, (nl or 0) - 1)
      if not nl then break end
      at = nl + 1
    end
    -- A copy retried after its answer was lost finds its own delta_id: answered as
    -- the duplicate it is, below.
    if changes[1] == '1' and redis.call('EXISTS', meta) == 1 and
        not (ARGV[a] ~= '' and redis.call('HEXISTS', dd, ARGV[a]) == 1) then
      out[#out + 1] = -1
      for i = 1, n do
        out[#out + 1] = ''
        out[#out + 1] = 0
      end
      return
    end
    table.remove(changes, 1)
  end
  local deduping = false
  for i = 0, n - 1 do
    if ARGV[a + 3 * i] ~= '' then deduping = true end
  end
  if deduping then
    -- Expired delta_ids are dropped by the calls that add new ones: the index stays
    -- bounded by what a window holds, and the whole key lapses a window after the last.
    now = now or now_ms()
    local expired = redis.call('ZRANGEBYSCORE', ddx, '-inf', now, 'LIMIT', 0, 2 * n + 8)
    if #expired > 0 then
      chunked('HDEL', dd, expired, 1)
      chunked('ZREM', ddx, expired, 1)
    end
  end
  local woke = #out + 1
  out[woke] = 0
  local first, added, recorded = false, false, false
  for i = 0, n - 1 do
    local delta_id, payload, ids = ARGV[a + 3 * i], ARGV[a + 1 + 3 * i], ARGV[a + 2 + 3 * i]
    local seen = false
    if delta_id ~= '' then seen = redis.call('HGET', dd, delta_id) end
    if seen then
      out[#out + 1] = seen
      out[#out + 1] = 0
    else
      local v
      if ids ~= '' then
        v = redis.call('XADD', log, '*', 'd', payload, 'f', ids)
      else
        v = redis.call('XADD', log, '*', 'd', payload)
      end
      if delta_id ~= '' then
        redis.call('HSET', dd, delta_id, v)
        redis.call('ZADD', ddx, now + dedupe_ms, delta_id)
        recorded = true
      end
      out[#out + 1] = v
      out[#out + 1] = 1
      first = first or v
      added = v
    end
  end
  if not added then return end
  -- 'e' is new only on a thread's first append (or its first after a delete): the
  -- thread is born, and takes its incarnation (see fence()).
  if redis.call('HSET', meta, 'e', added) == 1 then
    redis.call('SADD', all, ref)
    -- 'b': its first entry. A log that no longer starts there lost entries, and a
    -- version before it is no state of this incarnation (see PREFIX).
    redis.call('HSET', meta, 'i', birth_token, 'b', first)
    born(meta, ref, first, changes)
  end
  if recorded and dedupe_ms > 0 then
    redis.call('PEXPIRE', dd, dedupe_ms)
    redis.call('PEXPIRE', ddx, dedupe_ms)
  end
  -- A set flag implies the thread is already in its bucket's dirty set (ingest and
  -- retry add it before setting the flag; only a commit without backlog or a
  -- quarantine removes it, and they clear the flag with it). A quarantined thread
  -- stays out of the dirty set until an operator retries it.
  local quarantined = redis.call('HGET', meta, 'q')
  if not quarantined and redis.call('SET', sched, '1', 'NX', 'PX', sched_ms) then
    redis.call('ZADD', dirty, 'NX', ms_of(first), ref)
    out[woke] = 1
  end
end

local a = 5
for t = 0, threads - 1 do
  local ref, n = ARGV[a], tonumber(ARGV[a + 1])
  ingest(7 * t, ref, n, ARGV[a + 2], a + 3)
  a = a + 3 + 3 * n
end
return out

-- One bucket's part of a TTL sweep: remove its threads whose time came (at most
-- `limit`), each whole and at once (forget, lifecycle.lua). A write that lands before
-- keeps the thread (it has a backlog, or its commit moved the time on); one after
-- starts a new thread. Nothing here writes a thread key, so nothing is resurrected.
-- KEYS: expiry dirty quarantine threads
-- ARGV: tag limit default_ttl_ms
-- -> {due, ref*}: the entries that were due (`limit` of them: more may be), the refs
--    removed
local tag, default = ARGV[1], tonumber(ARGV[3])
local now = now_ms()
local due = redis.call('ZRANGE', KEYS[1], '-inf', now, 'BYSCORE', 'LIMIT', 0,
                       tonumber(ARGV[2]))
local out = {#due}
for _, ref in ipairs(due) do
  local m = redis.call('HMGET', KEY.meta(tag, ref), 't', 'e', 'x', 'pn')
  local lives = ttl_of(m[3], m[4], default)
  if not m[2] or lives == 0 then   -- gone, pinned, or its TTL lifted: not listed
    redis.call('ZREM', KEYS[1], ref)
  elseif redis.call('ZSCORE', KEYS[2], ref) or redis.call('ZSCORE', KEYS[3], ref) then
    -- Deltas not yet applied (or waiting for an operator): nothing accepted is lost to a
    -- TTL. Looked at again a TTL later (a commit sets its time sooner).
    redis.call('ZADD', KEYS[1], now + lives, ref)
  elseif last_active(m[1], m[2]) + lives > now then   -- a longer TTL since it was listed
    redis.call('ZADD', KEYS[1], last_active(m[1], m[2]) + lives, ref)
  else
    forget(tag, ref, 'expired', KEYS[2], KEYS[3], KEYS[4], KEYS[1])
    out[#out + 1] = ref
  end
end
return out

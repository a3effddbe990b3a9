-- A thread's metadata, TTL and pin, changed together or not at all.
-- KEYS: meta metadata terms expiry
-- ARGV: ref ttl pinned default_ttl_ms max_keys max_bytes {key value}*
--       (ttl: '' unchanged, '-' back to the default, else ms; pinned: '' unchanged,
--       '1' or '0'; value: a value's JSON, '' deletes the key)
-- -> {} when the thread does not exist (nothing written); {'refused', limit, reached}
--    when the metadata would pass a limit ('keys' or 'bytes'; nothing written);
--    else {'ok'}
if redis.call('EXISTS', KEYS[1]) == 0 then return {} end
local ref, ttl, pinned = ARGV[1], ARGV[2], ARGV[3]
if #ARGV > 6 then
  local changes = {}
  for i = 7, #ARGV do changes[#changes + 1] = ARGV[i] end
  local refused = set_metadata(KEYS[2], KEYS[3], ref, changes, tonumber(ARGV[5]),
                               tonumber(ARGV[6]))
  if refused then return {'refused', refused[1], refused[2]} end
end
if ttl == '-' then redis.call('HDEL', KEYS[1], 'x')
elseif ttl ~= '' then redis.call('HSET', KEYS[1], 'x', ttl) end
if pinned == '1' then redis.call('HSET', KEYS[1], 'pn', '1')
elseif pinned == '0' then redis.call('HDEL', KEYS[1], 'pn') end
if ttl ~= '' or pinned ~= '' then   -- its place in the sweep's list, by the new TTL
  local m = redis.call('HMGET', KEYS[1], 't', 'e', 'x', 'pn')
  local lives = ttl_of(m[3], m[4], tonumber(ARGV[4]))
  if lives == 0 then
    redis.call('ZREM', KEYS[4], ref)
  else
    redis.call('ZADD', KEYS[4], last_active(m[1], m[2]) + lives, ref)
  end
end
return {'ok'}

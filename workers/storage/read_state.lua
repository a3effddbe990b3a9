-- KEYS: meta pages index
-- ARGV: mode anchor_id limit anchor_fingerprint   (mode: 'all' | 'after' | 'before';
--       limit: -1 for all)
-- -> {} when never written, else {cursor, total, anchor_found, anchor_position,
--     page_number, page, ...}: the pages that hold the first `limit + 1` messages of
-- the range (all of them for limit -1), in no particular order; the reader orders them
-- by number and slices the records (core/pages.py), so the server only walks record
-- headers, and only when a limit asks it to.
if redis.call('EXISTS', KEYS[1]) == 0 then return {} end
local mode, anchor, limit = ARGV[1], ARGV[2], tonumber(ARGV[3])
local meta = redis.call('HMGET', KEYS[1], 'c', 'm', 'ib', 'pp')
local cursor, total = meta[1] or '0-0', tonumber(meta[2] or '0')
local per = tonumber(meta[4] or MAX_PAGE_RECORDS)
local from = -1
if mode ~= 'all' then
  from = finder(KEYS[2], KEYS[3], tonumber(meta[3] or '0'), per)(anchor, ARGV[4])
  if not from then return {cursor, total, 0, -1} end
end
local out = {cursor, total, 1, from}
if limit < 0 and mode == 'all' then
  for _, v in ipairs(redis.call('HGETALL', KEYS[2])) do out[#out + 1] = v end
  return out
end
-- The page numbers in the range, nearest the anchor first.
local numbers = {}
for i, v in ipairs(redis.call('HKEYS', KEYS[2])) do numbers[i] = tonumber(v) end
table.sort(numbers)
local ordered = {}
if mode == 'before' then
  for i = #numbers, 1, -1 do
    if numbers[i] <= page_of(from, per) then ordered[#ordered + 1] = numbers[i] end
  end
else
  for _, number in ipairs(numbers) do
    if mode == 'all' or number >= page_of(from, per) then ordered[#ordered + 1] = number end
  end
end
local function count(page)   -- records of the page inside the range
  local c, at, n = 0, 1, #page
  while at <= n do
    local p, il, bl = struct.unpack('>I4I4I4', page, at)
    if mode == 'all' or (mode == 'after' and p > from) or (mode == 'before' and p < from) then
      c = c + 1
    end
    at = at + 16 + il + bl
  end
  return c
end
local got = 0
for i = 1, #ordered, 16 do
  local part = {unpack(ordered, i, math.min(i + 15, #ordered))}
  local pages = redis.call('HMGET', KEYS[2], unpack(part))
  for j, page in ipairs(pages) do
    out[#out + 1] = part[j]
    out[#out + 1] = page
    if limit >= 0 then got = got + count(page) end
  end
  if limit >= 0 and got > limit then break end
end
return out

-- KEYS: meta pages
-- ARGV: direction want   (direction: 'last' | 'first'; want: a token count)
-- -> {} when never written, else {cursor, total, complete, first_number, first_page,
--     page_number, page, ...}: the pages from the thread's end ('last') or start
-- ('first'), in that order, until their records' token counts add up past `want`
-- (each record carries its message's count: core/context.py, state.lua). Reading
-- 'last', the thread's first page comes too (first_number -1 and '' when the pages
-- sent hold it: an include_system window keeps the first message). `complete` is 1
-- when the pages sent are all of the thread's. The cost is the window's pages, not
-- the thread's: pages are found by number, stepping over numbers of dropped pages.
if redis.call('EXISTS', KEYS[1]) == 0 then return {} end
local direction, want = ARGV[1], tonumber(ARGV[2])
local meta = redis.call('HMGET', KEYS[1], 'c', 'm', 'pp', 'n')
local cursor, total = meta[1] or '0-0', tonumber(meta[2] or '0')
local out = {cursor, total, 1, -1, ''}
if total == 0 then return out end
local per = tonumber(meta[3] or MAX_PAGE_RECORDS)
local top = page_of(tonumber(meta[4] or '1') - 1, per)
if redis.call('HLEN', KEYS[2]) <= 4 then   -- a short thread: all of it, in one reply
  for _, v in ipairs(redis.call('HGETALL', KEYS[2])) do out[#out + 1] = v end
  return out
end

local function tokens(page)   -- the page's records' counts, added
  local sum, at, n = 0, 1, #page
  while at <= n do
    local _, il, bl, t = struct.unpack('>I4I4I4I4', page, at)
    sum = sum + t
    at = at + 16 + il + bl
  end
  return sum
end

-- Walk page numbers from `from` by `dir` (-1 or 1) up to `stop` inclusive, HMGET a
-- growing run at a time, sending each page found until `enough(page)` says stop.
-- Returns the number reached (past `stop` when the walk ran out).
local function walk(from, dir, stop, enough)
  local number, run = from, 8
  while (dir < 0 and number >= stop) or (dir > 0 and number <= stop) do
    local last = number + dir * (run - 1)
    if dir < 0 then last = math.max(last, stop) else last = math.min(last, stop) end
    local numbers = {}
    for i = number, last, dir do numbers[#numbers + 1] = i end
    local pages = redis.call('HMGET', KEYS[2], unpack(numbers))
    for j, page in ipairs(pages) do
      if page then
        out[#out + 1] = numbers[j]
        out[#out + 1] = page
        if enough(page) then return numbers[j] end
      end
    end
    number = last + dir
    run = math.min(run * 2, 512)
  end
  return number
end

local sum = 0
local function past_want(page)
  sum = sum + tokens(page)
  return sum > want
end
if direction == 'first' then
  local reached = walk(0, 1, top, past_want)
  if reached < top then out[3] = 0 end
  return out
end
local reached = walk(top, -1, 0, past_want)
if reached > 0 then
  -- the first page, below the lowest one sent (none: that one is the first)
  local below = #out
  local found = walk(0, 1, reached - 1, function() return true end)
  if found <= reached - 1 then
    out[3] = 0
    out[4] = out[below + 1]
    out[5] = out[below + 2]
    out[below + 1], out[below + 2] = nil, nil
  end
end
return out

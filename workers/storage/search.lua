-- One bucket's part of a search of a tenant's threads: those holding every given
-- metadata value and, if asked, in the given status, latest first by the order's time
-- (last activity, or creation), strictly after the cursor. Read-only.
-- KEYS: order terms dirty quarantine   (order: the tenant's active or born set)
-- ARGV: tag limit budget after_score after_ref status n_terms {key value}*
--       (after_score '' = from the start; status '' = any, else idle|busy|quarantined)
-- Where a list holding every match is at most `budget` long — the rarest given term's
-- holders, or for status busy or quarantined the bucket's backlog or quarantine set —
-- its threads are all checked: the answer is the bucket's whole. Else the order is
-- walked from the cursor and at most `budget` threads are looked at; where that stops
-- before `limit` matches is the frontier, past which the bucket is unknown.
-- -> {frontier_score, frontier_ref, {score, ref}*}   ('' '' when the bucket is done)
local tag, limit, budget = ARGV[1], tonumber(ARGV[2]), tonumber(ARGV[3])
local after_score, after_ref, status = ARGV[4], ARGV[5], ARGV[6]
local want, fields = wanted(7)
local cursor = after_score ~= '' and tonumber(after_score) or nil

local function matches(ref)
  return holds(tag, ref, want, fields) and
    (status == '' or status_of(ref, KEYS[3], KEYS[4]) == status)
end
local function past_cursor(score, ref)   -- later in the order (latest first)
  return cursor == nil or score < cursor or (score == cursor and ref < after_ref)
end
local function answer(found, fs, fr)
  table.sort(found, function(x, y)
    if x[1] ~= y[1] then return x[1] > y[1] end
    return x[2] > y[2]
  end)
  local out = {fs, fr}
  for i = 1, math.min(limit, #found) do
    out[#out + 1] = int(found[i][1])
    out[#out + 1] = found[i][2]
  end
  return out
end

local found = {}
local term, size = nil, nil
if #want > 0 then
  term, size = rarest(KEYS[2], want)
  if size == 0 then return {'', ''} end
end
-- The bucket's backlog and quarantine sets hold every tenant's busy and quarantined
-- threads: another tenant's have no score in this tenant's order, and are left out.
local by_status = (status == 'busy' and KEYS[3]) or (status == 'quarantined' and KEYS[4])
local listed = nil
if by_status then
  local n = redis.call('ZCARD', by_status)
  if size == nil or n < size then
    if n == 0 then return {'', ''} end
    if n <= budget then listed = redis.call('ZRANGE', by_status, 0, -1) end
  end
end
if not listed and size and size <= budget then listed = holders(KEYS[2], term) end
if listed then
  for _, ref in ipairs(listed) do
    local score = redis.call('ZSCORE', KEYS[1], ref)
    if score then
      score = tonumber(score)
      if past_cursor(score, ref) and matches(ref) then found[#found + 1] = {score, ref} end
    end
  end
  return answer(found, '', '')
end
local top = cursor and int(cursor) or '+inf'
local looked, offset = 0, 0
-- Unfiltered, the first `limit` past the cursor are the answer: read no more.
local step = (#want == 0 and status == '') and math.min(128, limit + 1) or 128
while true do
  local chunk = redis.call('ZRANGE', KEYS[1], top, '-inf', 'BYSCORE', 'REV', 'LIMIT',
                           offset, step, 'WITHSCORES')
  if #chunk == 0 then return answer(found, '', '') end
  for i = 1, #chunk, 2 do
    local ref, score = chunk[i], tonumber(chunk[i + 1])
    if past_cursor(score, ref) then
      looked = looked + 1
      if matches(ref) then
        found[#found + 1] = {score, ref}
        if #found >= limit then return answer(found, '', '') end
      end
      if looked >= budget then return answer(found, int(score), ref) end
    end
  end
  offset = offset + #chunk / 2
end

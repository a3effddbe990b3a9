-- KEYS: meta pages index
-- ARGV: {id fingerprint}*
-- -> {{id, position}* for the ids the thread holds, {page_number, page}* holding them,
--     positions_per_page}
local meta = redis.call('HMGET', KEYS[1], 'ib', 'pp')
local buckets, per = tonumber(meta[1] or '0'), tonumber(meta[2] or MAX_PAGE_RECORDS)
local find, found, held, seen = finder(KEYS[2], KEYS[3], buckets, per), {}, {}, {}
for i = 1, #ARGV, 2 do
  local pos, page = find(ARGV[i], ARGV[i + 1])
  if pos then
    found[#found + 1] = ARGV[i]
    found[#found + 1] = pos
    local number = page_of(pos, per)
    if not seen[number] then
      seen[number] = true
      held[#held + 1] = number
      held[#held + 1] = page
    end
  end
end
return {found, held, per}

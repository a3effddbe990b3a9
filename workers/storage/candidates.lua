-- The second step of reading a batch, for one or more threads (a worker reads the
-- threads' meta (HEAD) and their next log entries (one plain XREAD) first: an XRANGE
-- inside a script makes a Lua string of every field of every entry, and that was half
-- of the read's server time). Counts the read as an attempt (failures
-- quarantine a thread after a limit), and finds the candidate positions of the
-- fingerprints of the ids the batch mentions, with the pages holding them.
-- Unconfirmed: the worker checks each against the id in its record, and rewrites the
-- pages it edits itself, so the commit writes them without reading them (they cannot
-- change unless the fence does).
-- KEYS per thread: meta pages index
-- ARGV per thread: fence fingerprints   (the fence the worker read
-- with the entries, and the fingerprints (4 bytes each, distinct; '' for none)
-- -> per thread: {-1} when the fence moved since (a commit, a rebuild, a delete: the
--    worker reads again, and a deleted thread's meta is not written back), else
--    {attempts, positions_per_page, c, fingerprint1, position1, ..., fingerprintC,
--     positionC, page_number, page, ...}
local function candidates(k, read_fence, mentioned)
  local meta = redis.call('HMGET', KEYS[k + 1], 'ib', 'pp', 'c', 'g', 'i')
  if fence(meta[3], meta[4], meta[5]) ~= read_fence then return {-1} end
  local per = tonumber(meta[2] or MAX_PAGE_RECORDS)
  local out = {redis.call('HINCRBY', KEYS[k + 1], 'a', 1), per, 0}
  local fps = {}
  for at = 1, #mentioned - 3, 4 do fps[#fps + 1] = string.sub(mentioned, at, at + 3) end
  if #fps == 0 then return out end
  local match = matcher(KEYS[k + 3], tonumber(meta[1] or '0'), fps)
  local numbers, seen = {}, {}
  for _, fpb in ipairs(fps) do
    for _, pos in ipairs(match(fpb)) do
      out[#out + 1] = fpb
      out[#out + 1] = pos
      out[3] = out[3] + 1
      local number = page_of(pos, per)
      if not seen[number] then
        seen[number] = true
        numbers[#numbers + 1] = number
      end
    end
  end
  local got = read_fields(KEYS[k + 2], numbers)
  for _, number in ipairs(numbers) do
    out[#out + 1] = number
    out[#out + 1] = got[number]
  end
  return out
end

local all = {}
for t = 0, #ARGV / 2 - 1 do all[t + 1] = candidates(3 * t, ARGV[2 * t + 1], ARGV[2 * t + 2]) end
return all

-- A thread's state (see core/pages.py): two hashes.
--   pages: page number -> records; the record at position p is in page floor(p / per),
--          records in position order, `per` the thread's positions per page (meta 'pp').
--          Record: position, id length, body length, token count (4 x 4 bytes,
--          big-endian), id, body.
--   index: bucket number -> entries (4-byte id fingerprint, 4-byte position), a linear
--          hash over the fingerprints; meta 'ib' holds the number of buckets.
-- Every page and bucket is found by arithmetic: no lookup of where a blob is, and no
-- blob read that a change does not rewrite. (Every string Redis hands Lua is hashed
-- byte by byte, so bytes moved into Lua are the cost to keep down.)

local function page_of(pos, per) return math.floor(pos / per) end

-- The n records to insert that ARGV lists from `first` as {fingerprint position record}*:
-- recs = {pos, record}* for the pages, added = {fingerprint, pos}* for the index.
local function inserts_of(first, n)
  local recs, added = {}, {}
  for i = first, first + 3 * n - 1, 3 do
    local pos = tonumber(ARGV[i + 1])
    recs[#recs + 1] = pos
    recs[#recs + 1] = ARGV[i + 2]
    added[#added + 1] = ARGV[i]
    added[#added + 1] = pos
  end
  return recs, added
end

-- Positions per page for records like these ({pos, record}*): as many as fit in
-- PAGE_BYTES on average, 1 to MAX_PAGE_RECORDS. Chosen when a thread (re)starts empty
-- and kept in its meta ('pp') while it holds records: a page's cost to rewrite is its
-- bytes, its overhead is per page.
local function positions_per_page(recs)
  local bytes = 0
  for i = 2, #recs, 2 do bytes = bytes + #recs[i] end
  local per = math.floor(PAGE_BYTES / math.max(1, bytes / (#recs / 2)))
  return math.max(1, math.min(MAX_PAGE_RECORDS, per))
end

-- Many fields in one call each way (a call costs more than the bytes it moves here):
-- HMGET of `fields` -> {field = value or ''}; HSET of {field, value}*; HDEL of fields.
local function read_fields(key, fields)
  local got = {}
  for i = 1, #fields, 4000 do   -- Lua's unpack has a stack limit
    local part = {unpack(fields, i, math.min(i + 3999, #fields))}
    for j, v in ipairs(redis.call('HMGET', key, unpack(part))) do got[part[j]] = v or '' end
  end
  return got
end
local function write_fields(key, pairs_, dropped)
  -- Deletes first: a field both dropped and written (a page emptied by a batch, then
  -- appended to by the same batch) ends up written.
  for i = 1, #dropped, 4000 do
    redis.call('HDEL', key, unpack(dropped, i, math.min(i + 3999, #dropped)))
  end
  for i = 1, #pairs_, 4000 do
    redis.call('HSET', key, unpack(pairs_, i, math.min(i + 3999, #pairs_)))
  end
end

local function bucket_of(fp, buckets)   -- linear hashing: buckets [0, n - top) are split
  local top = 1
  while top * 2 <= buckets do top = top * 2 end
  local b = fp % (top * 2)
  if b >= buckets then b = fp % top end
  return b
end

-- Where the record at pos lies in a page: its first byte, id length, body length (or
-- false). Headers are walked without building anything.
local function record_at(page, pos)
  local at, n = 1, #page
  while at <= n do
    local p, il, bl = struct.unpack('>I4I4I4', page, at)
    if p == pos then return at, il, bl end
    if p > pos then return false end
    at = at + 16 + il + bl
  end
  return false
end

-- Where `needle` starts in a bucket at or after `from`, as an entry's first byte or
-- its fingerprint: a match must be entry-aligned (or false).
local function entry_at(chunk, needle, from)
  while true do
    local s = string.find(chunk, needle, from, true)
    if not s or (s - 1) % 8 == 0 then return s or false end
    from = s + 1
  end
end

-- The candidate positions of a fingerprint (4 bytes), from a thread's index of
-- `buckets` buckets (each bucket is read once per call; the buckets of `expected`
-- fingerprints, when given, all at once). Also returned: the buckets it read, by
-- number (a commit that edits the index starts there).
local function matcher(index, buckets, expected)
  local chunks = {}
  if expected and buckets > 0 then
    local wanted, seen = {}, {}
    for _, fpb in ipairs(expected) do
      local b = bucket_of(struct.unpack('>I4', fpb), buckets)
      if not seen[b] then
        seen[b] = true
        wanted[#wanted + 1] = b
      end
    end
    chunks = read_fields(index, wanted)
  end
  return function(fpb)
    local found = {}
    if buckets == 0 then return found end
    local b = bucket_of(struct.unpack('>I4', fpb), buckets)
    local chunk = chunks[b]
    if not chunk then
      chunk = redis.call('HGET', index, int(b)) or ''
      chunks[b] = chunk
    end
    local s = entry_at(chunk, fpb, 1)
    while s do
      found[#found + 1] = struct.unpack('>I4', chunk, s + 4)
      s = entry_at(chunk, fpb, s + 8)
    end
    return found
  end, chunks
end

-- An exact lookup for one thread: (id, fingerprint bytes) -> position and the page
-- holding it (or false): a candidate is confirmed against its record's id. Also
-- returned: the pages and the index buckets it read, by number (a caller that edits
-- them starts there); expected: the fingerprints to be looked up, their buckets read
-- in one call.
local function finder(pages, index, buckets, per, expected)
  local candidates, buckets_read = matcher(index, buckets, expected)
  local pages_read = {}
  return function(id, fpb)
    for _, pos in ipairs(candidates(fpb)) do
      local number = page_of(pos, per)
      local page = pages_read[number]
      if page == nil then
        page = redis.call('HGET', pages, int(number)) or ''
        pages_read[number] = page
      end
      local at, il = record_at(page, pos)
      if at and il == #id and string.sub(page, at + 16, at + 15 + il) == id then
        return pos, page
      end
    end
    return false
  end, pages_read, buckets_read
end

-- Appends records past every stored position: recs = {pos, record}*, ascending. Only
-- the first one's page can exist already (the last page, partly filled): as stored, or
-- as this commit rewrites it (in `written`, {number, page}*) or empties it (in
-- `dropped`). The pages it makes are added to `written`: the caller writes them all
-- in one call.
local function append_pages(pages, per, recs, written, dropped)
  local i = 1
  while i <= #recs do
    local number = page_of(recs[i], per)
    local parts = {}
    if i == 1 and recs[1] % per ~= 0 then
      local current = false
      for j = 1, #written, 2 do
        if tonumber(written[j]) == number then current = written[j + 1] end
      end
      for _, d in ipairs(dropped) do
        if tonumber(d) == number then current = '' end
      end
      parts[1] = current or redis.call('HGET', pages, int(number)) or ''
    end
    while i <= #recs and page_of(recs[i], per) == number do
      parts[#parts + 1] = recs[i + 1]
      i = i + 2
    end
    written[#written + 1] = int(number)   -- after any rewrite of it: in one HSET, the last wins
    written[#written + 1] = table.concat(parts)
  end
end

-- Buckets split one at a time while they average more than BUCKET_ENTRIES entries
-- (linear hashing) -> the number of buckets now.
local function split_buckets(index, buckets, total)
  while total > buckets * BUCKET_ENTRIES do   -- split the next bucket in line
    local top = 1
    while top * 2 <= buckets do top = top * 2 end
    local low = buckets - top
    local chunk = redis.call('HGET', index, low) or ''
    local stay, move = {}, {}
    for at = 1, #chunk, 8 do
      local e = string.sub(chunk, at, at + 7)
      if struct.unpack('>I4', e) % (top * 2) == low then
        stay[#stay + 1] = e
      else
        move[#move + 1] = e
      end
    end
    if #stay > 0 then
      redis.call('HSET', index, low, table.concat(stay))
    else
      redis.call('HDEL', index, low)
    end
    if #move > 0 then redis.call('HSET', index, low + top, table.concat(move)) end
    buckets = buckets + 1
  end
  return buckets
end

-- A few entries appended to buckets the caller read (a commit of new messages, the
-- common one): each bucket's entries on its end, without edit_index's bookkeeping by
-- bucket, which cost a spread delta 7% more instructions (callgrind). false when a
-- bucket was not read (edit_index reads it).
local FEW_ADDS = 8   -- entries: concatenating one at a time copies the bucket each time
local function append_index(index, adds, buckets, read)
  local grown, order = {}, {}
  for i = 1, #adds, 2 do
    local b = bucket_of(struct.unpack('>I4', adds[i]), buckets)
    local chunk = grown[b] or read[b]
    if chunk == nil then return false end
    if not grown[b] then order[#order + 1] = b end
    grown[b] = chunk .. adds[i] .. struct.pack('>I4', adds[i + 1])
  end
  for _, b in ipairs(order) do redis.call('HSET', index, int(b), grown[b]) end
  return true
end

-- Adds and removes index entries (adds, dels = {fingerprint bytes, pos}*) of a thread
-- whose index has `buckets` buckets and will hold `total` entries; one rewrite per
-- bucket touched, then buckets split one at a time while they average more than
-- BUCKET_ENTRIES. -> the number of buckets now. read: buckets already read (by
-- number, under this bucket count: a finder's), not read again.
local function edit_index(index, adds, dels, buckets, total, read)
  if buckets == 0 then   -- no bucket yet: the index is empty (a clear deletes it)
    buckets, read = 1, {[0] = ''}
  end
  if #dels == 0 and #adds <= 2 * FEW_ADDS and read and
      append_index(index, adds, buckets, read) then
    return split_buckets(index, buckets, total)
  end
  local touched, order = {}, {}
  local function bucket(fpb)
    local b = bucket_of(struct.unpack('>I4', fpb), buckets)
    local t = touched[b]
    if not t then
      t = {'', {}, {}}
      touched[b] = t
      order[#order + 1] = b
    end
    return t
  end
  for i = 1, #dels, 2 do bucket(dels[i])[3][dels[i] .. struct.pack('>I4', dels[i + 1])] = true end
  for i = 1, #adds, 2 do
    local t = bucket(adds[i])
    t[2][#t[2] + 1] = adds[i] .. struct.pack('>I4', adds[i + 1])
  end
  local current, missing, written, dropped = {}, {}, {}, {}
  for _, b in ipairs(order) do
    if read and read[b] then current[b] = read[b] else missing[#missing + 1] = b end
  end
  if #missing > 0 then
    for b, chunk in pairs(read_fields(index, missing)) do current[b] = chunk end
  end
  for _, b in ipairs(order) do
    local chunk, added, gone = current[b], touched[b][2], touched[b][3]
    local parts, cuts, kept = {}, {}, 1
    for e in pairs(gone) do
      local s = entry_at(chunk, e, 1)
      if s then cuts[#cuts + 1] = s end
    end
    table.sort(cuts)
    for _, s in ipairs(cuts) do
      if kept < s then parts[#parts + 1] = string.sub(chunk, kept, s - 1) end
      kept = s + 8
    end
    if kept <= #chunk then parts[#parts + 1] = string.sub(chunk, kept) end
    for _, e in ipairs(added) do parts[#parts + 1] = e end
    local new = table.concat(parts)
    if #new > 0 then
      written[#written + 1] = int(b)
      written[#written + 1] = new
    else
      dropped[#dropped + 1] = b
    end
  end
  write_fields(index, written, dropped)
  return split_buckets(index, buckets, total)
end

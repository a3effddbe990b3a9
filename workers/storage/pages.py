"""How a thread's state is packed into Redis values: pages of records, an index of ids.

Redis spends 50 to 200 bytes of bookkeeping on every hash field or sorted-set member
(dict entry, skiplist node, allocator rounding), as much as a short message itself. So
a thread stores its messages several to a value, in two hashes:

* **pages**: the message at position ``p`` is a *record* in page ``p // per``, records
  in position order. ``per`` is chosen when a thread starts (or restarts) empty, from
  the size of its first records: as many as fit in :data:`PAGE_BYTES` on average, so a
  page costs about the same to rewrite whatever the messages' size. An append extends
  the last page or starts the next; an update rewrites its record in place; a page
  left empty is dropped. Reading a thread is reading its pages in number order.
* **index**: maps an id to its position, for the updates and removes that name it.
  Entries (4-byte fingerprint of the id, 4-byte position) sit in buckets of a linear
  hash over the fingerprints, which splits one bucket at a time as the thread grows
  (the thread's meta hash holds the bucket count).

Both are found by arithmetic, never searched for: with Redis's Lua hashing every byte
of every string it is handed, the bytes a script reads are its main cost, and these
layouts read only what a change rewrites.

The fingerprint is the id's CRC-32, computed here, never in the scripts
(``redis.sha1hex`` cost more than the rest of a lookup; in Python CRC-32 costs a third
of SHA-1). Only its spread matters: a match is a candidate, confirmed against the id
in the record at that position (by the worker, in the page read with the batch, or by
the ``LOOKUP`` script), so a collision costs a comparison, never a wrong answer. (Ids
crafted to collide only slow their own thread's lookups.)

Each record carries its message's token count (LangChain's ``count_tokens_approximately``
of that one message, :mod:`threadfold.core.context`), written by the commit that writes
the message: a list's count is the sum of its messages', so a context window of a long
thread is found by adding the counts of the records from its end, never by decoding
(or counting) the whole thread.

The record layout is a fixed binary header Lua's ``struct`` reads; this module is the
Python half: building records, finding and splicing them in the pages a worker edits
(the commit writes those pages whole: Lua would hash every byte it splices), reading
pages back.
"""

from __future__ import annotations

import struct
import zlib
from collections.abc import Sequence
from typing import Final

#: A page holds about this many bytes of records (it sets a thread's positions per page:
#: an update rewrites a page, and Redis's Lua hashes every byte a script is handed,
#: while each page costs Redis ~55 bytes of bookkeeping plus allocator rounding).
PAGE_BYTES: Final = 1024
#: At most this many positions per page (short messages).
MAX_PAGE_RECORDS: Final = 16
#: Index buckets split (one at a time) while they average more entries than this.
BUCKET_ENTRIES: Final = 48

#: Record header: position, id length, body length, token count (big-endian, as Lua's
#: struct reads). Positions stay below 2**32: one per message ever added to the thread.
HEADER: Final = struct.Struct(">IIII")
#: The header's bytes (the scripts step over it as 16).
HEADER_BYTES: Final = HEADER.size
_unpack_header = HEADER.unpack_from
_pack_header = HEADER.pack


_pack_fingerprint = struct.Struct(">I").pack
_crc32 = zlib.crc32


def fingerprint(ident: str) -> bytes:
    """An id's index key: its CRC-32, 4 bytes big-endian (a spread, not a secret)."""
    return _pack_fingerprint(_crc32(ident.encode()))


def fingerprints(ids: Sequence[str]) -> bytes:
    """The fingerprints of the ids a delta mentions, in order: stored beside the delta
    (log field ``f``) so a worker can look their positions up without decoding the delta."""
    if len(ids) == 1:  # most deltas: one message
        return _pack_fingerprint(_crc32(ids[0].encode()))
    return b"".join([_pack_fingerprint(_crc32(i.encode())) for i in ids])


def record(ident: str, position: int, body: bytes, tokens: int) -> bytes:
    """One message as a page holds it: header, UTF-8 id, stored body."""
    raw = ident.encode()
    return _pack_header(position, len(raw), len(body), tokens) + raw + body


#: A record's header without its position: what the ingest script places (see
#: :func:`unplaced`).
_pack_unplaced = struct.Struct(">III").pack


def unplaced(ident: str, body: bytes, tokens: int) -> bytes:
    """A record but for its position (the header's first 4 bytes): an append the
    ingest script commits itself is given its position there, where the thread's next
    one is known (``struct.pack('>I4', position) .. unplaced`` is :func:`record`)."""
    raw = ident.encode()
    return _pack_unplaced(len(raw), len(body), tokens) + raw + body


#: The body length of an unplaced record that stands for its id's removal (no body):
#: no body is this long (a value of Redis is at most 512 MB).
REMOVAL: Final = 0xFFFFFFFF


def unplaced_removal(ident: str) -> bytes:
    """What :func:`unplaced` is for an id the delta removes: its header (body length
    :data:`REMOVAL`, no token count) and the id, no body."""
    raw = ident.encode()
    return _pack_unplaced(len(raw), REMOVAL, 0) + raw


def split_records(page: bytes, ids: list[bytes], bodies: list[bytes]) -> None:
    """Append the ids and bodies of a page's records to the lists, in order (a whole
    thread's read: no tuple per record)."""
    at, end, unpack = 0, len(page), _unpack_header
    while at < end:
        _, id_len, body_len, _ = unpack(page, at)
        at += 16
        cut = at + id_len
        ids.append(page[at:cut])
        at = cut + body_len
        bodies.append(page[cut:at])


def records(page: bytes) -> list[tuple[int, bytes, bytes]]:
    """``(position, id, body)`` of each record of a page, in order."""
    out = []
    at, end, size = 0, len(page), HEADER_BYTES
    while at < end:
        position, id_len, body_len, _ = _unpack_header(page, at)
        at += size
        out.append((position, page[at : at + id_len], page[at + id_len : at + id_len + body_len]))
        at += id_len + body_len
    return out


def sized_records(page: bytes) -> list[tuple[int, bytes, bytes, int]]:
    """``(position, id, body, tokens)`` of each record of a page, in order."""
    out = []
    at, end, size = 0, len(page), HEADER_BYTES
    while at < end:
        position, id_len, body_len, tokens = _unpack_header(page, at)
        at += size
        cut = at + id_len
        out.append((position, page[at:cut], page[cut : cut + body_len], tokens))
        at = cut + body_len
    return out


def _locate(page: bytes, position: int) -> tuple[int, int, int] | None:
    """Where the id of the record at ``position`` starts, its length and its body's
    length, or None when the page holds no record there (headers are walked; records
    ascend, so the walk stops past the position)."""
    at, end = 0, len(page)
    while at < end:
        found, id_len, body_len, _ = _unpack_header(page, at)
        if found == position:
            return at + 16, id_len, body_len
        if found > position:
            return None
        at += 16 + id_len + body_len
    return None


def id_at(page: bytes, position: int) -> bytes | None:
    """The UTF-8 id of the record at ``position`` in a page (None: not there)."""
    where = _locate(page, position)
    return None if where is None else page[where[0] : where[0] + where[1]]


def body_at(page: bytes, position: int) -> bytes | None:
    """The stored body of the record at ``position`` in a page (None: not there)."""
    where = _locate(page, position)
    if where is None:
        return None
    start = where[0] + where[1]
    return page[start : start + where[2]]


def edit_page(page: bytes, changes: dict[int, bytes | None]) -> bytes:
    """The page with the records at the positions of ``changes`` replaced (by a record)
    or removed (None); unchanged runs are copied whole. A position the page does not
    hold is ignored: the caller checked the ids, under the commit's fence."""
    parts: list[bytes] = []
    kept = at = 0
    end = len(page)
    while at < end:
        position, id_len, body_len, _ = _unpack_header(page, at)
        stop = at + 16 + id_len + body_len
        if position in changes:
            if kept < at:
                parts.append(page[kept:at])
            change = changes[position]
            if change is not None:
                parts.append(change)
            kept = stop
        at = stop
    if kept < end:
        parts.append(page[kept:end])
    return b"".join(parts)

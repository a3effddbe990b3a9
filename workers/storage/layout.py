"""A check of one thread's packed state: what the scripts promise about pages and index
(and each record's token count: its message's, counted again).

The scripts keep a thread's pages, its index and its meta counts consistent with each
other; this reads them all and says where they are not (tests and the benchmarks run
it after every load, and an operator can run it on a live thread: it only reads).
"""

from __future__ import annotations

import struct

from threadfold.core.codec import decode_stored
from threadfold.core.context import approximate
from threadfold.workers.redisio.client import as_bytes, text
from threadfold.workers.storage import meta
from threadfold.workers.storage.pages import (
    BUCKET_ENTRIES,
    MAX_PAGE_RECORDS,
    fingerprint,
    sized_records,
)
from threadfold.workers.storage.store import Store

_ENTRY = struct.Struct(">II")


def bucket_of(fp: int, buckets: int) -> int:
    """The linear-hash bucket of a fingerprint (as the scripts compute it)."""
    top = 1
    while top * 2 <= buckets:
        top *= 2
    b = fp % (top * 2)
    return fp % top if b >= buckets else b


def _count_problems(position: int, ident: bytes, body: bytes, tokens: int) -> list[str]:
    counted = approximate(decode_stored(body, ident.decode()))
    if tokens == counted:
        return []
    return [f"position {position}: the record counts {tokens} tokens, its message {counted}"]


def layout_problems(store: Store, ref: str) -> list[str]:
    """What is wrong with the thread's pages and index (empty when nothing is)."""
    k = store.keyspace.thread(ref)
    client = store.client
    problems: list[str] = []
    pages = sorted((int(text(n)), as_bytes(v)) for n, v in client.hgetall(k.pages).items())
    buckets = {int(text(n)): as_bytes(v) for n, v in client.hgetall(k.index).items()}
    fields = client.hmget(k.meta, meta.MESSAGES, meta.INDEX_BUCKETS, meta.PER_PAGE)
    count, width, per = (int(text(v)) if v is not None else None for v in fields)
    count, width, per = count or 0, width or 0, per or MAX_PAGE_RECORDS
    held: list[tuple[int, int]] = []  # (fingerprint, position) of every record
    last = -1
    for number, page in pages:
        found = sized_records(page)
        if not found:
            problems.append(f"page {number} is empty")
        for position, ident, body, tokens in found:
            if position // per != number or position <= last:
                problems.append(f"page {number}: position {position} out of place")
            problems += _count_problems(position, ident, body, tokens)
            last = position
            held.append((int.from_bytes(fingerprint(ident.decode()), "big"), position))
    entries: list[tuple[int, int]] = []
    for number, chunk in buckets.items():
        if number >= max(width, 1) or not chunk or len(chunk) % _ENTRY.size:
            problems.append(f"index bucket {number} of {width}: {len(chunk)} bytes")
            continue
        for at in range(0, len(chunk), _ENTRY.size):
            fp, position = _ENTRY.unpack_from(chunk, at)
            if bucket_of(fp, width) != number:
                problems.append(f"index bucket {number}: fingerprint {fp} in the wrong bucket")
            entries.append((fp, position))
    if sorted(entries) != sorted(held):
        problems.append(f"index holds {len(entries)} entries for {len(held)} records")
    if count != len(held):
        problems.append(f"meta counts {count} messages, pages hold {len(held)}")
    if held and count > max(width, 1) * BUCKET_ENTRIES:
        problems.append(f"{count} entries in {width} buckets: a split is overdue")
    return problems

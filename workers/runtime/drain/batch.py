"""A drain round's batches: what a worker reads of each thread before folding.

Reading takes two round trips for all the round's threads: HEAD (meta) with one plain
XREAD of their logs, then CANDIDATES (the attempt count, the candidate positions of the
ids the entries name, and the pages holding them), both scripts of
:mod:`threadfold.workers.storage`.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

from redis.cluster import RedisCluster

from threadfold.core.keys import Keyspace, ThreadKeys
from threadfold.core.versions import entry_key
from threadfold.workers.redisio.client import (
    MAX_MERGED,
    Call,
    Command,
    as_bytes,
    run_many,
    run_merged,
    text,
)
from threadfold.workers.storage import candidates, head
from threadfold.workers.storage.meta import ENTRY_FINGERPRINTS, ENTRY_PAYLOAD, fence
from threadfold.workers.storage.pages import MAX_PAGE_RECORDS, id_at
from threadfold.workers.storage.store import Store


@lru_cache(maxsize=65_536)
def thread_keys(ks: Keyspace, ref: str) -> ThreadKeys:
    """``ks.thread(ref)``, kept for busy threads (a drain round asks several times)."""
    return ks.thread(ref)


def read_batches(
    store: Store, refs: Sequence[str], max_entries: int, hints: Mapping[str, str] | None = None
) -> list[Batch]:
    """The next batch of each thread, in two pipelined round trips for all of them:
    meta (a read-only script call) and log entries (one plain XREAD), then one script
    call for the attempt count, the candidate positions of the entries' ids and their
    pages. ``hints``: a cursor each thread had, to read its log from (when applied
    entries are kept for replay; without one the log is read from its start)."""
    hints = hints or {}
    ks, client = store.keyspace, store.client
    cluster = isinstance(client, RedisCluster)
    reads, owners = read_calls(ks, refs, max_entries, hints, cluster)
    read = parse_reads(ks, owners, run_many(client, reads), hints, max_entries)
    batches = [read[ref] for ref in refs]
    asked = [(ref, b) for ref, b in zip(refs, batches, strict=True) if b.entries]
    calls = [candidates.call(ks, ref, b.fence, b.mentioned) for ref, b in asked]
    for (_, batch), raw in zip(asked, run_merged(client, calls), strict=True):
        add_candidates(batch, raw)
    return batches


def read_batch(store: Store, ref: str, max_entries: int) -> Batch:
    return read_batches(store, [ref], max_entries)[0]


@dataclass(slots=True)  # not frozen: one is made per thread per round, and a frozen
class Batch:  # dataclass's __init__ sets each field through object.__setattr__
    """What a worker reads before folding: the fence it must commit against."""

    #: The fence: the cursor (the version the batch folds onto), the rebuild generation
    #: once a rebuild replaced the state, and the thread's incarnation (see
    #: :func:`~threadfold.workers.storage.meta.fence`): a commit stands only if none moved.
    fence: str
    next_position: int
    quarantined: str
    attempts: int
    entries: list[tuple[str, bytes]] = field(default_factory=list)
    #: Candidate positions of the fingerprints the entries list, or None when an entry
    #: did not list them (written by hand).
    candidates: dict[bytes, list[int]] | None = None
    #: The thread's positions per page, and the stored pages that hold the candidates
    #: (as of the fence: the commit rewrites them from these).
    per: int = MAX_PAGE_RECORDS
    pages: dict[int, bytes] = field(default_factory=dict)
    #: The cursor alone (the entries follow it), and whether the log was read from too
    #: far back to reach past it (read again from ``cursor``).
    cursor: str = "0-0"
    reread: bool = False
    #: The distinct fingerprints the entries list (what the second step looks up), or
    #: None when one does not list them.
    mentioned: bytes | None = None

    def known(self, ids: Collection[str]) -> dict[str, int] | None:
        """The stored positions of ``ids``, each confirmed against its record's id (a
        fingerprint match that is another id is no match), or None when the batch
        cannot tell (an entry did not list its fingerprints).

        Walks the candidates rather than the ids: a batch of new ids (the common case)
        has none, and a candidate's record names its id, so no fingerprint is computed
        here. A position holds one id, so a record whose id the batch mentions is that
        id's position, whichever fingerprint brought it.
        """
        candidates = self.candidates
        if candidates is None:
            return None
        found: dict[str, int] = {}
        if not candidates:
            return found
        wanted = {ident.encode(): ident for ident in ids}
        per, pages = self.per, self.pages
        for positions in candidates.values():
            for position in positions:
                raw = id_at(pages.get(position // per, b""), position)
                if raw is not None and (ident := wanted.get(raw)) is not None:
                    found[ident] = position
        return found


def read_calls(
    ks: Keyspace, refs: Sequence[str], max_entries: int, hints: Mapping[str, str], cluster: bool
) -> tuple[list[Call | Command], list[list[str]]]:
    """The first step of reading the batches of many threads, and the threads of each
    pair of calls: for each group of threads sharing a slot (all of them on a standalone
    server; at most MAX_MERGED), one HEAD call for their meta, then one XREAD of their
    logs, each from its ``hints`` entry (a cursor it had) or from its start (which is the
    cursor itself when applied entries are trimmed at once). One reply per group, not
    two per thread: a reply costs the worker more than its bytes."""
    groups: dict[str, list[ThreadKeys]] = {}
    for ref in refs:
        k = thread_keys(ks, ref)
        groups.setdefault(k.tag if cluster else "", []).append(k)
    calls: list[Call | Command] = []
    owners: list[list[str]] = []
    for members in groups.values():
        for at in range(0, len(members), MAX_MERGED):
            part = members[at : at + MAX_MERGED]
            logs = [k.log for k in part]
            starts = [hints.get(k.ref) or "0-0" for k in part]
            calls.append(head.call([k.meta for k in part]))
            xread: tuple[str | int, ...] = ("XREAD", "COUNT", max_entries, "STREAMS")
            xread += (*logs, *starts)
            calls.append(Command(xread, logs[0]))
            owners.append([k.ref for k in part])
    return calls, owners


def parse_reads(
    ks: Keyspace,
    owners: Sequence[list[str]],
    replies: Sequence[Any],
    hints: Mapping[str, str],
    max_entries: int,
) -> dict[str, Batch]:
    """The batches of the threads :func:`read_calls` read, by ref, before the second
    step (CANDIDATES, :func:`add_candidates`)."""
    batches: dict[str, Batch] = {}
    for n, part in enumerate(owners):
        metas, streams = replies[2 * n], replies[2 * n + 1] or ()
        # RESP3 answers XREAD with a map, RESP2 with pairs.
        pairs = streams.items() if isinstance(streams, dict) else streams
        logs = {text(key): entries for key, entries in pairs}
        for ref, meta in zip(part, metas, strict=True):
            log = logs.get(thread_keys(ks, ref).log, ())
            batches[ref] = parse_read(meta, log, hints.get(ref), max_entries)
    return batches


def parse_read(
    meta: Sequence[Any], log: Sequence[Any], hint: str | None, max_entries: int
) -> Batch:
    """One thread's batch from its meta and log entries: entries at or before the
    cursor (a log kept for replay, or read from a stale hint) are dropped."""
    c, g, i, n, q = meta
    cursor = text(c) if c is not None else "0-0"
    floor = entry_key(cursor)
    # Entry ids ascend: skip those at or before the cursor, then take the rest.
    first = 0
    while first < len(log) and entry_key(text(log[first][0])) <= floor:
        first += 1
    entries: list[tuple[str, bytes]] = []
    seen: dict[bytes, None] | None = {}
    for raw in log[first:] if first else log:
        fields = raw[1]
        if (  # the producer's entries: d, f
            type(fields) is list and len(fields) == 4 and fields[0] == b"d" and fields[2] == b"f"
        ):
            payload, listed = fields[1], fields[3]
        else:
            payload, listed = _fields(fields)
        entries.append((text(raw[0]), payload))
        if seen is None:
            continue
        if listed is None or len(listed) % 4:
            seen = None  # not listed, or unreadable: looked up by id instead
        elif len(listed) == 4:
            seen[listed] = None
        else:
            for at in range(0, len(listed), 4):
                seen[listed[at : at + 4]] = None
    # A hint past the cursor (the thread was deleted and written again) may have
    # skipped entries; a read from so far back that every entry was applied reaches none.
    stale = (hint is not None and entry_key(hint) > floor) or (
        not entries and len(log) >= max_entries > 0
    )
    quarantined = (text(q) or "quarantined") if q is not None else ""  # set: as in Lua
    return Batch(
        fence(c, g, i),
        int(n or 0),
        quarantined,
        0,
        [] if stale or quarantined else entries,
        cursor=cursor,
        reread=stale,
        mentioned=b"".join(seen) if seen is not None else None,
    )


def _fields(fields: Any) -> tuple[bytes, bytes | None]:
    """The payload and fingerprints of any entry (written by hand, or as redis-py parses
    it after a cluster redirection)."""
    if isinstance(fields, dict):
        fields = [x for pair in fields.items() for x in pair]
    payload, mentioned = b"", None
    for j in range(0, len(fields) - 1, 2):
        name = fields[j]
        if name in (b"d", ENTRY_PAYLOAD):
            payload = as_bytes(fields[j + 1])
        elif name in (b"f", ENTRY_FINGERPRINTS):
            mentioned = as_bytes(fields[j + 1])
    return payload, mentioned


def add_candidates(batch: Batch, raw: list[Any]) -> None:
    """Complete a batch with its CANDIDATES answer: when the fence
    moved since the read, it is to be read again (its entries are dropped)."""
    found = candidates.parse(raw, batch.mentioned is not None)
    if found is None:
        batch.entries = []
        batch.reread = True
        return
    batch.attempts, batch.per = found.attempts, found.per
    if found.positions is not None:
        batch.candidates = found.positions
        batch.pages = found.pages

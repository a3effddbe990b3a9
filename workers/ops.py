"""Script calls built and answers parsed: the pure half of the store.

Each ``*_call`` returns a :class:`Call` (script, keys, args) and each ``parse_*`` turns
the script's raw answer into a typed value, so the sync store, the asyncio store and
the producer share one definition of every exchange with Redis.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any, Final

import msgspec

from threadfold.core import scripts
from threadfold.core.codec import decode_stored
from threadfold.core.fold import Effect
from threadfold.core.keys import Keyspace, ThreadKeys
from threadfold.core.messages import BaseMessage
from threadfold.core.pages import (
    MAX_PAGE_RECORDS,
    body_at,
    edit_page,
    fingerprint,
    id_at,
    record,
    records,
    split_records,
)
from threadfold.workers.redis_io import MAX_MERGED, Call, Command, Script

INGEST: Final = Script("ingest", scripts.INGEST)
HEAD: Final = Script("head", scripts.HEAD)
CANDIDATES: Final = Script("candidates", scripts.CANDIDATES)
COMMIT: Final = Script("commit", scripts.COMMIT)
FAIL: Final = Script("fail", scripts.FAIL)
RETRY: Final = Script("retry", scripts.RETRY)
WAKE: Final = Script("wake", scripts.WAKE)
READ_STATE: Final = Script("read_state", scripts.READ_STATE)
DELETE: Final = Script("delete", scripts.DELETE)
STATUS: Final = Script("status", scripts.STATUS)
REBUILD: Final = Script("rebuild", scripts.REBUILD)
BACKLOG: Final = Script("backlog", scripts.BACKLOG)
LOOKUP: Final = Script("lookup", scripts.LOOKUP)
ALL_SCRIPTS: Final = (
    INGEST,
    HEAD,
    CANDIDATES,
    COMMIT,
    FAIL,
    RETRY,
    WAKE,
    READ_STATE,
    DELETE,
    STATUS,
    REBUILD,
    LOOKUP,
    BACKLOG,
)


def text(value: Any) -> str:
    """A Redis reply as text (clients may or may not decode responses)."""
    return value.decode() if isinstance(value, bytes) else str(value)


# -- ingestion ---------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class IngestAnswer:
    """One thread's part of an ingest call: each delta's version and whether it is new
    (not a retried delta_id), and whether this call set the wake-up flag."""

    versions: list[str]
    new: list[bool]
    woke: bool


IngestGroup = tuple[str, Sequence[tuple[str, bytes, bytes]]]


def ingest_call(ks: Keyspace, groups: Sequence[IngestGroup], dedupe_ms: int, wake_ms: int) -> Call:
    """Append deltas to one or more threads, each thread's in order: ``groups`` holds
    ``(ref, [(delta_id or '', payload, encoded ids or ''), ...])``. On a cluster every
    thread of one call must be in one bucket (:func:`ingest_groups`)."""
    keys: list[str] = []
    args: list[str | bytes | int] = [dedupe_ms, wake_ms, len(groups)]
    for ref, deltas in groups:
        keys += _ingest_keys(ks, ref)
        args += [ref, len(deltas)]
        for delta_id, payload, mentioned in deltas:
            args += [delta_id, payload, mentioned]
    return Call(INGEST, keys, args)


def ingest_groups(ks: Keyspace, refs: Sequence[str], cluster: bool) -> list[list[str]]:
    """Which threads share an ingest call: all of them on one server (keys may span
    slots there), the threads of each bucket on a cluster (a script's keys must share
    a slot). Calls are capped so one script never holds the server for long."""
    if not cluster:
        return [
            list(refs[i : i + MAX_THREADS_PER_INGEST])
            for i in range(0, len(refs), MAX_THREADS_PER_INGEST)
        ]
    by_bucket: dict[int, list[str]] = {}
    for ref in refs:
        by_bucket.setdefault(ks.bucket_of(ref), []).append(ref)
    return [
        group[i : i + MAX_THREADS_PER_INGEST]
        for group in by_bucket.values()
        for i in range(0, len(group), MAX_THREADS_PER_INGEST)
    ]


#: Most threads in one ingest call (a few hundred microseconds of server time).
MAX_THREADS_PER_INGEST: Final = 200


# Key names per thread, memoized: building seven f-strings per call was a visible share of
# a bulk ingest's CPU, and a busy process touches the same threads again and again.
@lru_cache(maxsize=65_536)
def _ingest_keys(ks: Keyspace, ref: str) -> tuple[str, ...]:
    k = ks.thread(ref)
    return (k.log, k.meta, k.sched, k.dirty, k.threads, k.dedupe, k.dedupe_expiry, k.births)


@lru_cache(maxsize=65_536)
def thread_keys(ks: Keyspace, ref: str) -> ThreadKeys:
    """``ks.thread(ref)``, kept for busy threads (a drain round asks several times)."""
    return ks.thread(ref)


@lru_cache(maxsize=65_536)
def _drain_keys(ks: Keyspace, ref: str) -> tuple[str, ...]:
    """meta log pages index sched dirty"""
    k = ks.thread(ref)
    return (k.meta, k.log, *k.state, k.sched, k.dirty)


def parse_ingest(raw: list[Any], counts: Sequence[int]) -> list[IngestAnswer]:
    """One answer per thread of the call; ``counts`` are their numbers of deltas."""
    answers, at = [], 0
    for n in counts:
        end = at + 1 + 2 * n
        versions = [text(v) for v in raw[at + 1 : end : 2]]
        new = [flag == 1 for flag in raw[at + 2 : end : 2]]
        answers.append(IngestAnswer(versions, new, raw[at] == 1))
        at = end
    return answers


# -- draining ----------------------------------------------------------------------------------


@dataclass(slots=True)  # not frozen: one is made per thread per round, and a frozen
class Batch:  # dataclass's __init__ sets each field through object.__setattr__
    """What a worker reads before folding: the fence it must commit against."""

    #: The fence: the cursor (the version the batch folds onto), the rebuild generation
    #: once a rebuild replaced the state, and the thread's incarnation (see
    #: :func:`fence`): a commit stands only if none moved.
    cursor: str
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
    #: far back to reach past it (read again from ``after``).
    after: str = "0-0"
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


def fence(cursor: Any, generation: Any, incarnation: Any) -> str:
    """What a commit compares (as the scripts' ``fence()`` builds it from meta c, g, i)."""
    out = text(cursor) if cursor is not None else "0-0"
    if generation is not None:
        out += "@" + text(generation)
    if incarnation is not None:
        out += "#" + text(incarnation)
    return out


def entry_key(entry: str) -> tuple[int, int]:
    """A stream entry id as numbers, for ordering."""
    ms, _, seq = entry.partition("-")
    return int(ms), int(seq or 0)


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
            calls.append(Call(HEAD, [k.meta for k in part], []))
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
    step (:func:`candidates_call`, :func:`add_candidates`)."""
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
        after=cursor,
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
        if name in (b"d", "d"):
            payload = as_bytes(fields[j + 1])
        elif name in (b"f", "f"):
            mentioned = as_bytes(fields[j + 1])
    return payload, mentioned


def candidates_call(ks: Keyspace, ref: str, batch: Batch) -> Call:
    """The second step, if the fence is still the one read with the entries: count the
    read as an attempt, and the candidate positions of the fingerprints the entries list
    with the pages holding them. Calls of many threads merge into one (``run_merged``);
    a call's answer is one section per thread (:func:`add_candidates` takes one)."""
    meta, _, pages, index, _, _ = _drain_keys(ks, ref)
    return Call(CANDIDATES, [meta, pages, index], [batch.cursor, batch.mentioned or b""])


def add_candidates(batch: Batch, raw: list[Any]) -> None:
    """Complete a batch with the answer of its :func:`candidates_call`: when the fence
    moved since the read, it is to be read again (its entries are dropped)."""
    if int(raw[0]) < 0:
        batch.entries = []
        batch.reread = True
        return
    batch.attempts, batch.per, c = int(raw[0]), int(raw[1]), int(raw[2])
    if batch.mentioned is None:
        return  # candidates is None: the worker looks the ids up
    candidates: dict[bytes, list[int]] = {}
    end = 3 + 2 * c
    for i in range(3, end, 2):
        candidates.setdefault(as_bytes(raw[i]), []).append(int(raw[i + 1]))
    batch.candidates = candidates
    batch.pages = {int(raw[i]): as_bytes(raw[i + 1]) for i in range(end, len(raw), 2)}


def lookup_call(ks: Keyspace, ref: str, ids: Sequence[str]) -> Call:
    """Where the thread holds these ids, and the pages that hold them."""
    k = ks.thread(ref)
    args: list[str | bytes] = []
    for ident in ids:
        args += [ident, fingerprint(ident)]
    return Call(LOOKUP, [k.meta, *k.state], args)


@dataclass(frozen=True, slots=True)
class Found:
    """Where a thread holds some ids: positions by id, the pages holding them."""

    positions: dict[str, int]
    pages: dict[int, bytes]
    per: int

    def bodies(self) -> dict[str, bytes]:
        """The stored bodies by id."""
        found = {}
        for key, position in self.positions.items():
            body = body_at(self.pages.get(position // self.per, b""), position)
            if body is not None:
                found[key] = body
        return found


def parse_lookup(raw: list[Any]) -> Found:
    found, held, per = raw
    positions = {text(found[i]): int(found[i + 1]) for i in range(0, len(found), 2)}
    pages = {int(held[i]): as_bytes(held[i + 1]) for i in range(0, len(held), 2)}
    return Found(positions, pages, int(per))


def as_bytes(value: Any) -> bytes:
    """A Redis reply as bytes."""
    return value if isinstance(value, bytes) else str(value).encode()


def commit_call(
    ks: Keyspace,
    ref: str,
    *,
    batch: Batch,
    new_cursor: str,
    next_position: int,
    effect: Effect,
    known: Mapping[str, int],
    pages: Mapping[int, bytes],
    per: int,
    applied: int,
    retention_ms: int,
    wake_ms: int,
    encode: Any,
) -> Call:
    """The compare-and-set commit of one folded batch: only its net effect is written.

    ``known`` are the stored positions the batch was folded over, confirmed against
    ``pages``, the stored pages holding them (``per`` positions each) as of the batch's
    fence. An upsert at its
    known position is rewritten in place; one at a new position is appended, and a
    known id re-added after a remove in the batch has its old record removed. The
    pages edited are rewritten here and sent whole: Redis's Lua hashes every byte of
    every string it makes, and a page spliced in a script was made three times (read,
    cut, joined), where a page spliced here is made once in the commit's arguments.
    """
    meta, log, pages_key, index, sched, dirty = _drain_keys(ks, ref)
    if effect.cleared:
        known = {}  # the clear took every stored record
    removed: list[bytes | int] = []
    changes: dict[int, bytes | None] = {}
    inserts: list[tuple[int, str, BaseMessage]] = []
    for key in effect.removed:
        old = known.get(key)
        if old is not None:  # else it was new in this batch: nothing stored
            removed += [fingerprint(key), old]
            changes[old] = None
    for key, (position, message) in effect.upserts.items():
        old = known.get(key)
        if old == position:
            changes[position] = record(key, position, encode(message))
            continue
        if old is not None:
            removed += [fingerprint(key), old]
            changes[old] = None
        inserts.append((position, key, message))
    inserts.sort(key=_first)
    edited = _edited_pages(changes, per, pages)
    args: list[str | bytes | int] = [
        batch.cursor,
        new_cursor,
        next_position,
        "1" if effect.cleared else "0",
        len(removed) // 2,
        len(edited) // 2,
        len(inserts),
        retention_ms,
        wake_ms,
        ref,
        applied,
        *removed,
        *edited,
    ]
    for position, key, message in inserts:
        args += [fingerprint(key), position, record(key, position, encode(message))]
    keys = [meta, pages_key, index, log, sched, dirty]
    # Counted, so that calls of many threads merge into one (``run_merged``); a call's
    # answer is a list of one section per thread (``parse_commit`` takes one).
    return Call(COMMIT, keys, [len(args), *args])


def _edited_pages(
    changes: Mapping[int, bytes | None], per: int, pages: Mapping[int, bytes]
) -> list[bytes | int]:
    """``{page_number, page}*`` of the pages ``changes`` rewrite (b"" when emptied)."""
    by_page: dict[int, dict[int, bytes | None]] = {}
    for position, change in changes.items():
        by_page.setdefault(position // per, {})[position] = change
    out: list[bytes | int] = []
    for number, edits in by_page.items():
        out += [number, edit_page(pages[number], edits)]
    return out


def _first(item: tuple[int, str, BaseMessage]) -> int:
    return item[0]


@dataclass(frozen=True, slots=True)
class Committed:
    """A commit's answer: refused (the fence moved), or done, with backlog left or not."""

    ok: bool
    more: bool = False
    now_ms: int = 0


def parse_commit(raw: list[Any]) -> Committed:
    if int(raw[0]) != 1:
        return Committed(ok=False)
    return Committed(ok=True, more=bool(int(raw[1])), now_ms=int(raw[2]))


def fail_call(
    ks: Keyspace, ref: str, *, limit: int, reason: str, entry: str, backoff_ms: int
) -> Call:
    k = ks.thread(ref)
    return Call(
        FAIL, [k.meta, k.sched, k.dirty, k.quarantine], [limit, reason, entry, ref, backoff_ms]
    )


def retry_call(ks: Keyspace, ref: str, wake_ms: int, skip: bool) -> Call:
    k = ks.thread(ref)
    return Call(
        RETRY,
        [k.meta, k.sched, k.dirty, k.quarantine, k.log],
        [ref, wake_ms, "1" if skip else "0", scripts.SKIPPED_KEPT],
    )


@dataclass(frozen=True, slots=True)
class Retried:
    """What a retry did: whether the thread was quarantined, whether this call set its
    wake-up flag (the caller sends the wake-up), the entry it skipped ('' for none),
    when a skip was asked for and none happened, why, and whether a backlog is left."""

    was_quarantined: bool
    woke: bool
    skipped: str
    not_skipped: str
    backlog: bool


def parse_retry(raw: list[Any]) -> Retried | None:
    """None when the thread does not exist (the script then wrote nothing)."""
    if int(raw[0]) < 0:
        return None
    was, woke, skipped, why, backlog = raw
    return Retried(bool(int(was)), bool(int(woke)), text(skipped), text(why), bool(int(backlog)))


def wake_call(ks: Keyspace, ref: str, wake_ms: int) -> Call:
    k = ks.thread(ref)
    return Call(WAKE, [k.meta, k.log, k.sched, k.dirty], [ref, wake_ms])


# -- reading -----------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class StatePage:
    """A consistent read of a thread (one script): messages in order and their version."""

    version: str
    total: int
    has_more: bool
    anchor_found: bool
    messages: list[BaseMessage]


def read_state_call(
    ks: Keyspace, ref: str, mode: str = "all", anchor: str = "", limit: int = -1
) -> Call:
    k = ks.thread(ref)
    return Call(READ_STATE, [k.meta, *k.state], [mode, anchor, limit, fingerprint(anchor)])


def parse_read_state(raw: list[Any], mode: str = "all", limit: int = -1) -> StatePage | None:
    """The answer to ``read_state_call(..., mode, anchor, limit)``."""
    found = parse_read_state_bodies(raw, mode, limit)
    if found is None:
        return None
    messages = [decode_stored(b, i.decode()) for i, b in zip(found.ids, found.bodies, strict=True)]
    return StatePage(found.version, found.total, found.has_more, found.anchor_found, messages)


@dataclass(frozen=True, slots=True)
class StateBodies:
    """A :class:`StatePage` with its messages still encoded, as stored."""

    version: str
    total: int
    has_more: bool
    anchor_found: bool
    ids: list[bytes]  # as Redis sent them (UTF-8): decoded only where a message is built
    bodies: list[bytes]


def parse_read_state_bodies(
    raw: list[Any], mode: str = "all", limit: int = -1
) -> StateBodies | None:
    """The records of the pages the script sent, cut to the range it was asked for."""
    if not raw:
        return None
    version, total, found = text(raw[0]), int(raw[1]), bool(int(raw[2]))
    anchor = int(raw[3])
    numbered = sorted(zip(map(int, raw[4::2]), raw[5::2], strict=True))
    if mode == "all" and limit < 0:  # a whole thread: the reads' hot path
        ids: list[bytes] = []
        bodies: list[bytes] = []
        for _, page in numbered:
            split_records(as_bytes(page), ids, bodies)
        return StateBodies(version, total, False, found, ids, bodies)
    held = [r for _, page in numbered for r in records(as_bytes(page))]
    if mode == "after":
        held = [r for r in held if r[0] > anchor]
    elif mode == "before":
        held = [r for r in held if r[0] < anchor]
    more = 0 <= limit < len(held)
    if more:
        held = held[-limit:] if mode == "before" and limit else held[:limit]
    return StateBodies(version, total, more, found, [r[1] for r in held], [r[2] for r in held])


def delete_call(ks: Keyspace, ref: str) -> Call:
    k = ks.thread(ref)
    keys = [
        k.log,
        k.meta,
        *k.state,
        k.sched,
        k.dedupe,
        k.dedupe_expiry,
        k.dirty,
        k.quarantine,
        k.threads,
    ]
    return Call(DELETE, keys, [ref])


@dataclass(frozen=True, slots=True)
class ThreadStatus:
    """What ``status`` reports about one thread."""

    version: str
    last_enqueued: str
    backlog: int
    messages: int
    last_commit_ms: int | None
    attempts: int
    quarantined: str
    quarantined_entry: str
    dirty_since_ms: int | None
    applied: int
    #: Entries an operator skipped (``retry --skip``), oldest first: the latest
    #: :data:`threadfold.core.scripts.SKIPPED_KEPT` of them.
    skipped: list[SkippedEntry] = field(default_factory=list)


class SkippedEntry(msgspec.Struct, frozen=True):
    """A log entry ``retry --skip`` removed: its id, why the drain failed on it, when."""

    entry: str
    reason: str
    at_ms: int


# The retry script writes the list with Lua's cjson (numbers as %.14g: a ms time is 13
# digits, so it stays an integer).
_SKIPPED: Final = msgspec.json.Decoder(list[SkippedEntry])


def status_call(ks: Keyspace, ref: str) -> Call:
    k = ks.thread(ref)
    return Call(STATUS, [k.meta, k.log, k.dirty], [ref])


def parse_status(raw: list[Any]) -> ThreadStatus | None:
    if not raw:
        return None
    c, e, t, a, q, qe, applied, added, count, dirty, skipped = (text(x) for x in raw)
    return ThreadStatus(
        version=c,
        last_enqueued=e,
        backlog=int(added) - int(applied),
        messages=int(count),
        last_commit_ms=int(t) if t else None,
        attempts=int(a),
        quarantined=q,
        quarantined_entry=qe,
        dirty_since_ms=int(float(dirty)) if dirty else None,
        applied=int(applied),
        skipped=_SKIPPED.decode(skipped),
    )


@dataclass(frozen=True, slots=True)
class Listed:
    """A thread in the status listing, with its backlog and version as one read saw
    them together with its listing (``reason`` and ``entry`` for a quarantined one)."""

    ref: str
    since_ms: int
    backlog: int
    version: str
    reason: str = ""
    entry: str = ""


@dataclass(frozen=True, slots=True)
class Listing:
    """Threads with a backlog and quarantined threads: how many, and the oldest of each."""

    with_backlog: int
    backlog: list[Listed]
    quarantined: int
    quarantine: list[Listed]


def backlog_call(ks: Keyspace, bucket: int, limit: int) -> Call:
    """One bucket's part of the status listing (its threads' keys are built in the
    script from what surrounds the ref in their names here)."""
    b = ks.bucket_keys(bucket)
    probe = ThreadKeys("\0", b.tag)
    meta_before, meta_after = probe.meta.split("\0")
    log_before, log_after = probe.log.split("\0")
    return Call(
        BACKLOG, [b.dirty, b.quarantine], [limit, meta_before, meta_after, log_before, log_after]
    )


def parse_listing(raws: Sequence[list[Any]], limit: int) -> Listing:
    """The buckets' answers to :func:`backlog_call` as one listing, oldest first."""
    with_backlog, quarantined = 0, 0
    backlog: list[Listed] = []
    quarantine: list[Listed] = []
    for n_dirty, dirty, n_quarantined, held in raws:
        with_backlog += int(n_dirty)
        quarantined += int(n_quarantined)
        backlog += (_listed(row) for row in dirty)
        quarantine += (_listed(row) for row in held)
    backlog.sort(key=_since)
    quarantine.sort(key=_since)
    return Listing(with_backlog, backlog[:limit], quarantined, quarantine[:limit])


def _listed(row: list[Any]) -> Listed:
    ref, since, backlog, version, *extra = (text(x) for x in row)
    return Listed(ref, int(float(since)), int(backlog), version, *extra)


def _since(listed: Listed) -> int:
    return listed.since_ms

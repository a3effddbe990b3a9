"""Replaying threads from their logs: replay, audit, rebuild (and the fold time travel uses).

A thread's log holds every delta it was given until a commit trims them (at once at
retention 0, after ``retention_seconds`` otherwise). While it holds them all, the
one-delta-at-a-time fold of the log is an independent recomputation of the thread:
``audit`` compares it with the live state, ``rebuild`` replaces a live state that
differs. Each reads a consistent prefix of the log (:mod:`threadfold.workers.replay.prefix`), so a
trim or
a delete that races it makes the thread *not replayable* (or the read is retried),
never a comparison with, or a rebuild from, a partial log.

Every function here raises or returns :class:`NotReplayable` with a :class:`Reason`:
``trimmed`` (the log no longer reaches back: nothing is compared or written),
``never_written``, ``deleted`` (during the read), ``before_birth``, ``poison`` (an
entry that cannot be decoded or folded, named) and ``moving``. The ``*_many`` forms
take a slice of threads at a time, a few pipelined round trips per slice, which is
what a recomputation of many threads should call.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Final

import msgspec

from threadfold.core.codec import decode_messages, decode_stored, encode_stored
from threadfold.core.context import approximate
from threadfold.core.dump import dump_messages
from threadfold.core.fold import ThreadFold
from threadfold.core.messages import BaseMessage
from threadfold.workers.redisio.client import Call, arun, run_many
from threadfold.workers.replay.prefix import (
    ATTEMPTS,
    LAST,
    NotReplayable,
    Prefix,
    PrefixRead,
    Reason,
    Retrying,
    read_many,
    travelling,
)
from threadfold.workers.storage import rebuild as rebuild_script
from threadfold.workers.storage.astore import AsyncStore
from threadfold.workers.storage.read_state import StatePage
from threadfold.workers.storage.store import Store

__all__ = [
    "Audit",
    "atravel",
    "NotReplayable",
    "Reason",
    "Replayed",
    "audit",
    "audit_many",
    "rebuild",
    "rebuild_many",
    "replay",
    "state_of",
]

#: Threads read together (one pipelined round trip per round for all of them).
SLICE: Final = 100


def _poison(ref: str, entry: str, why: str) -> NotReplayable:
    return NotReplayable(ref, Reason.POISON, f"log entry {entry} {why}", entry=entry)


def _decoded(prefix: Prefix) -> list[tuple[str, list[BaseMessage]]]:
    """The prefix's entries decoded, in order; the first that fails is poison."""
    out = []
    for entry, payload in prefix.entries:
        try:
            out.append((entry, decode_messages(payload)))
        except (msgspec.DecodeError, msgspec.ValidationError) as exc:
            why = f"cannot be decoded: {exc}" if payload else "has no payload (stream field 'd')"
            raise _poison(prefix.ref, entry, why) from exc
    return out


def _fold(prefix: Prefix, fold: ThreadFold) -> ThreadFold:
    """``fold`` with the prefix's entries applied one by one, as the drain applies them."""
    for entry, messages in _decoded(prefix):
        try:
            fold.apply(messages)
        except Exception as exc:  # any failure here is the entry's, as in a drain
            raise _poison(prefix.ref, entry, f"cannot be folded: {exc}") from exc
    return fold


def state_of(prefix: Prefix, *, merge_chunks: bool = False) -> list[BaseMessage]:
    """The thread's messages at ``prefix.version``: the prefix's entries folded onto the
    live state it was read with (or onto nothing)."""
    base = [decode_stored(b, i.decode()) for i, b in zip(prefix.ids, prefix.bodies, strict=True)]
    fold = ThreadFold.from_messages(base, merge_chunks=merge_chunks)
    return _fold(prefix, fold).ordered()


def at_version(prefix: Prefix, *, merge_chunks: bool = False) -> StatePage:
    """The state a time-travel read found, as one whole page (its version the last
    entry up to the version asked for). Raises :class:`NotReplayable` (poison) when an
    entry cannot be decoded or folded."""
    messages = state_of(prefix, merge_chunks=merge_chunks)
    return StatePage(prefix.version, len(messages), False, True, messages)


def travel(store: Store, ref: str, upto: str, *, merge_chunks: bool = False) -> StatePage:
    """The thread as of version ``upto`` (time travel): the live state with the log
    entries after it folded on when ``upto`` is at or after the cursor, else the log
    replayed from its first entry; read consistently (:mod:`threadfold.workers.replay.prefix`),
    a read overtaken by a trim or a delete read again. :class:`NotReplayable` says why
    there is no such state (trimmed, never written, deleted, before birth, poison,
    moving). :func:`atravel` drives the same read for asyncio (:class:`Retrying`)."""
    [found] = read_many(store.client, [ref], travelling(store.keyspace, upto))
    if isinstance(found, NotReplayable):
        raise found
    return at_version(found, merge_chunks=merge_chunks)


async def atravel(
    store: AsyncStore, ref: str, upto: str, *, merge_chunks: bool = False
) -> StatePage:
    """:func:`travel` over an asyncio client: each command of a read's round awaited
    before the next is sent (a round's commands must run in order: a page, then the
    check that follows it)."""
    reading = Retrying(ref, travelling(store.keyspace, upto))
    while reading.outcome is None:
        answers = []
        for item in reading.calls():
            if isinstance(item, Call):
                answers.append(await arun(store.client, item))
            else:
                answers.append(await store.client.execute_command(*item.args))
        reading.feed(answers)
    if isinstance(reading.outcome, NotReplayable):
        raise reading.outcome
    return at_version(reading.outcome, merge_chunks=merge_chunks)


@dataclass(frozen=True, slots=True)
class Replayed:
    """A replay up to ``version``: the folded thread and how many entries it took."""

    version: str
    entries: int
    fold: ThreadFold

    @property
    def messages(self) -> list[BaseMessage]:
        return self.fold.ordered()


def replay(store: Store, ref: str, upto: str = "+", *, merge_chunks: bool = False) -> Replayed:
    """The fold of the log's entries up to ``upto`` (inclusive), from an empty thread;
    :class:`NotReplayable` when the log does not hold them all."""
    upto = LAST if upto == "+" else upto
    [found] = read_many(
        store.client, [ref], lambda r: PrefixRead(store.keyspace, r, "replay", upto)
    )
    if isinstance(found, NotReplayable):
        raise found
    fold = _fold(found, ThreadFold(track=True, merge_chunks=merge_chunks))
    fold.take_effect()
    return Replayed(found.version, len(found.entries), fold)


@dataclass(frozen=True, slots=True)
class Audit:
    """An audit of one thread: its live state against the replay of its log up to the
    live version. ``differences`` says where they differ (empty: they match); by
    message id, ``added`` are in the replay only, ``removed`` in the live state only,
    ``changed`` in both with another message or place. ``rebuilt``: a rebuild replaced
    the live state with the replay (the rest describes the state it replaced)."""

    ref: str
    version: str
    entries: int
    differences: list[str]
    added: int = 0
    removed: int = 0
    changed: int = 0
    rebuilt: bool = False


@dataclass(frozen=True, slots=True)
class _Replay:
    """A replay from nothing, as the state stores it: records in position order."""

    ids: list[str]
    positions: list[int]
    bodies: list[bytes]
    tokens: list[int]  # each message's count, as its record carries it (core/context.py)
    next_position: int


def _replayed(prefix: Prefix, merge_chunks: bool) -> _Replay:
    # The fast fold (positions only, the last message of each id kept in the effect):
    # bodies are tracked only to merge chunks onto them.
    fold = _fold(prefix, ThreadFold(merge_chunks=merge_chunks))
    kept = sorted(fold.take_effect().upserts.items(), key=lambda item: item[1][0])
    return _Replay(
        [key for key, _ in kept],
        [position for _, (position, _) in kept],
        [encode_stored(message) for _, (_, message) in kept],
        [approximate(message) for _, (_, message) in kept],
        fold.next_position,
    )


def _same(ident: str, live: bytes, replayed: bytes) -> bool:
    """Stored bodies are compared as bytes (one encoder wrote both); a body stored by an
    older release (with its id inside) is compared by what it decodes to."""
    if live == replayed:
        return True
    a, b = decode_stored(live, ident), decode_stored(replayed, ident)
    return dump_messages([a]) == dump_messages([b])


def _compare(prefix: Prefix, replayed: _Replay) -> Audit:
    live = [i.decode() for i in prefix.ids]
    ids, bodies, live_bodies = replayed.ids, replayed.bodies, prefix.bodies
    entries = len(prefix.entries)
    if live == ids and live_bodies == bodies:  # the common case: nothing to describe
        return Audit(prefix.ref, prefix.version, entries, [])
    found = []
    if len(live) != len(ids):
        found.append(f"{len(live)} messages live, {len(ids)} replayed")
    for n, (a, b) in enumerate(zip(live, ids, strict=False)):
        if a != b:
            found.append(f"message {n}: live id {a!r} differs from replayed id {b!r}")
        elif not _same(a, live_bodies[n], bodies[n]):
            found.append(f"message {n} ({a!r}) differs")
    before, after = dict(zip(live, live_bodies, strict=True)), dict(zip(ids, bodies, strict=True))
    common_before = [i for i in live if i in after]
    common_after = [i for i in ids if i in before]
    moved = {a for a, b in zip(common_before, common_after, strict=True) if a != b}
    return Audit(
        prefix.ref,
        prefix.version,
        entries,
        found,
        added=sum(1 for i in ids if i not in before),
        removed=sum(1 for i in live if i not in after),
        changed=sum(1 for i in common_before if i in moved or not _same(i, before[i], after[i])),
    )


Audited = tuple[Audit, Prefix, _Replay] | NotReplayable


def _audited(store: Store, refs: Sequence[str], merge_chunks: bool) -> list[Audited]:
    out: list[Audited] = []
    for at in range(0, len(refs), SLICE):
        part = refs[at : at + SLICE]
        reads = read_many(store.client, part, lambda r: PrefixRead(store.keyspace, r, "audit"))
        for found in reads:
            if isinstance(found, NotReplayable):
                out.append(found)
                continue
            try:
                replayed = _replayed(found, merge_chunks)
            except NotReplayable as exc:
                out.append(exc)
                continue
            out.append((_compare(found, replayed), found, replayed))
    return out


def audit_many(
    store: Store, refs: Sequence[str], *, merge_chunks: bool = False
) -> list[Audit | NotReplayable]:
    """:func:`audit` of each thread, in order (an error is that thread's result)."""
    found = _audited(store, refs, merge_chunks)
    return [a if isinstance(a, NotReplayable) else a[0] for a in found]


def audit(store: Store, ref: str, *, merge_chunks: bool = False) -> Audit:
    """Compare the live state with the replay of the log up to the live version."""
    [found] = audit_many(store, [ref], merge_chunks=merge_chunks)
    if isinstance(found, NotReplayable):
        raise found
    return found


def _rebuild_call(store: Store, prefix: Prefix, replayed: _Replay) -> Call:
    messages = list(
        zip(replayed.ids, replayed.positions, replayed.bodies, replayed.tokens, strict=True)
    )
    k = store.keyspace.thread(prefix.ref)
    return rebuild_script.call(k, prefix.fence, replayed.next_position, messages)


def rebuild_many(
    store: Store, refs: Sequence[str], *, merge_chunks: bool = False, attempts: int = ATTEMPTS
) -> list[Audit | NotReplayable]:
    """:func:`rebuild` of each thread, in order (an error is that thread's result).
    A thread that is not replayable is left as it is."""
    results: dict[int, Audit | NotReplayable] = {}
    todo = list(range(len(refs)))
    for _ in range(attempts):
        calls: list[Call] = []
        owners: list[tuple[int, Audit]] = []
        for n, found in zip(
            todo, _audited(store, [refs[n] for n in todo], merge_chunks), strict=True
        ):
            if isinstance(found, NotReplayable):
                results[n] = found
            elif not found[0].differences:
                results[n] = found[0]
            else:
                calls.append(_rebuild_call(store, found[1], found[2]))
                owners.append((n, found[0]))
        todo = []
        # Fenced like a commit: a thread that moved since its read is read again.
        for (n, found_audit), done in zip(owners, run_many(store.client, calls), strict=True):
            if int(done):
                results[n] = replace(found_audit, rebuilt=True)
            else:
                todo.append(n)
        if not todo:
            break
    for n in todo:
        results[n] = NotReplayable(
            refs[n], Reason.MOVING, f"it kept moving; rebuild gave up after {attempts} attempts"
        )
    return [results[n] for n in range(len(refs))]


def rebuild(
    store: Store, ref: str, *, merge_chunks: bool = False, attempts: int = ATTEMPTS
) -> Audit:
    """Replace the live state with the replay when they differ, fenced like a commit;
    the audit of the state it replaced (``rebuilt`` when it wrote)."""
    [found] = rebuild_many(store, [ref], merge_chunks=merge_chunks, attempts=attempts)
    if isinstance(found, NotReplayable):
        raise found
    return found

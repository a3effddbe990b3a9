"""One consistent read of a thread's log prefix: what time travel, audit and rebuild fold.

A read starts at one instant of the thread, the ``PREFIX`` script: its meta, whether its
log still holds its whole history, the live state when the read wants it, and (time
travel) the first page of entries. The rest of the prefix follows in pages of plain
``XRANGE``, each followed by ``LOG_FENCE``. Pages are plain commands because a script
makes a Lua string of every field of every entry it reads: 2.2 µs of server time per
150-byte entry, against 0.4 µs for ``XRANGE`` (measured on this machine).

Why the pages add up to one prefix. Entries only ever join a log after its last one,
and only three things take them out: a commit's ``XTRIM MINID``, which drops a *prefix*;
an operator's skip (``XDEL`` of a poison entry after the cursor), which the live fold
skips too; and ``DELETE``, after which the thread is born again under a new incarnation
(meta ``i``). So when, after a page, the log still starts at or before the last entry
read before that page (the *anchor*) and the incarnation is the one the read began
with, no entry past the anchor was trimmed before the page was read, and the page
continues the prefix exactly. Otherwise the read has *moved* (:class:`Moved`): it starts
again from a new instant, and a partial prefix is never answered.

Each read is a small state machine (:class:`PrefixRead`: the calls of its next round,
then their replies), so the sync driver here runs the reads of many threads in lockstep,
one pipelined round trip per round for all of them, and the API's asyncio store drives
the same machine for one thread.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, Final, Literal

from threadfold.core.errors import ThreadfoldError
from threadfold.core.keys import Keyspace
from threadfold.core.versions import entry_key, parse_version
from threadfold.workers.redisio.client import Command, Item, SyncRedis, as_bytes, run_many, text
from threadfold.workers.storage import log_fence, prefix
from threadfold.workers.storage.meta import ENTRY_PAYLOAD, fence
from threadfold.workers.storage.pages import split_records

#: Log entries per page.
PAGE: Final = 1000
#: Reads of one thread started before one is given up as moving (each met a trim or a
#: delete while it read).
ATTEMPTS: Final = 5
#: The largest entry id Redis accepts: "up to the end of the log".
LAST: Final = "18446744073709551615-18446744073709551615"

Mode = Literal["travel", "audit", "replay"]


class Reason(StrEnum):
    """Why a thread's log cannot give the prefix asked for."""

    #: The log no longer holds the thread's whole history, and the version asked for is
    #: before the live state's (retention trimmed it: only the cursor and later serve).
    TRIMMED = "trimmed"
    #: The thread does not exist (never written, or deleted and not written again).
    NEVER_WRITTEN = "never_written"
    #: The thread existed when the read began and was deleted while it read.
    DELETED = "deleted"
    #: The version asked for precedes the current incarnation's first entry: it names a
    #: state of an earlier incarnation (deleted since) or of no thread at all.
    BEFORE_BIRTH = "before_birth"
    #: A log entry up to the version cannot be decoded or folded.
    POISON = "poison"
    #: Every attempt met a concurrent trim or delete.
    MOVING = "moving"


class NotReplayable(ThreadfoldError):
    """Raised when a thread's log cannot give the prefix asked for; ``reason`` says why.

    ``oldest_version`` (trimmed): the oldest version still served, the live state's;
    ``first_version`` (before birth): where the current incarnation begins; ``entry``
    (poison): the entry that cannot be decoded or folded.
    """

    def __init__(
        self,
        ref: str,
        reason: Reason,
        message: str,
        *,
        oldest_version: str | None = None,
        first_version: str | None = None,
        entry: str | None = None,
    ) -> None:
        super().__init__(f"thread {ref}: {message}")
        self.ref = ref
        self.reason = reason
        self.oldest_version = oldest_version
        self.first_version = first_version
        self.entry = entry


class Moved(ThreadfoldError):
    """Raised when a concurrent trim or delete overtook a read: read again."""


@dataclass(frozen=True, slots=True)
class Prefix:
    """A consistent read: ``entries`` to fold onto ``ids``/``bodies`` (the live state,
    when the read took it; else nothing), giving the thread's state at ``version``."""

    ref: str
    #: The version of the state the prefix gives: its last entry, or the cursor when it
    #: is the live state with nothing after it.
    version: str
    #: The thread's fence at the read's first instant (what a rebuild compares).
    fence: str
    #: The entries follow the live state (time travel at or after the cursor); else
    #: they start at the log's first entry.
    live: bool
    ids: list[bytes] = field(default_factory=list)
    bodies: list[bytes] = field(default_factory=list)
    entries: list[tuple[str, bytes]] = field(default_factory=list)


class PrefixRead:
    """One thread's read, round by round: :meth:`calls` are the next round's commands
    (to run in order on one connection), whose replies go to :meth:`feed`; then
    ``result`` is set, or another round is due. :meth:`feed` raises
    :class:`NotReplayable` or :class:`Moved`."""

    __slots__ = (
        "_anchor",
        "_begun",
        "_cursor",
        "_entries",
        "_fence",
        "_incarnation",
        "_keys",
        "_live",
        "_state",
        "first_page",
        "mode",
        "page",
        "ref",
        "result",
        "upto",
    )

    def __init__(
        self,
        ks: Keyspace,
        ref: str,
        mode: Mode,
        upto: str = "",
        *,
        first_page: int = 0,
        page: int = PAGE,
    ) -> None:
        if mode == "travel" and first_page < 1:
            # After the cursor the first page must come with the live state: at
            # retention 0 every commit trims what it applied, so a later page could not
            # tell a trim of what follows the cursor from one of what precedes it.
            raise ValueError("time travel reads its first page with the live state")
        if upto:
            parse_version(upto)  # InvalidVersion (a ValueError) before Redis sees it
        self._keys = ks.thread(ref)
        self.ref, self.mode, self.upto = ref, mode, upto
        self.first_page, self.page = first_page, page
        self.result: Prefix | None = None
        self._begun = False
        self._entries: list[tuple[str, bytes]] = []
        self._anchor = ""
        self._cursor = "0-0"
        self._fence = ""
        self._incarnation = ""
        self._live = False
        self._state: tuple[list[bytes], list[bytes]] = ([], [])

    def calls(self) -> list[Item]:
        k = self._keys
        if not self._begun:
            return [prefix.call(k, prefix.Args(self.mode, self.upto, self.first_page))]
        start = "(" + self._entries[-1][0] if self._entries else "-"
        return [
            Command(("XRANGE", k.log, start, self.upto, "COUNT", self.page), k.log),
            log_fence.call(k),
        ]

    def feed(self, replies: Sequence[Any]) -> None:
        if not self._begun:
            self._begin(replies[0])
        else:
            self._continue(replies[0], replies[1])

    def _begin(self, raw: Sequence[Any]) -> None:
        self._begun = True
        found = prefix.parse(raw)
        if isinstance(found, prefix.Missing):
            raise NotReplayable(self.ref, Reason.NEVER_WRITTEN, "it has never been written")
        if isinstance(found, prefix.Unborn):
            raise NotReplayable(
                self.ref,
                Reason.BEFORE_BIRTH,
                f"version {self.upto} precedes its first entry {found.birth}: no state of "
                "this thread (an earlier one of this name was deleted, or none was written "
                "yet)",
                first_version=found.birth,
            )
        if isinstance(found, prefix.Trimmed):
            raise NotReplayable(
                self.ref,
                Reason.TRIMMED,
                "retention trimmed its log: it no longer holds the thread's whole history, "
                "so no version before the live one can be replayed; the oldest version "
                f"served is {found.cursor}",
                oldest_version=found.cursor,
            )
        c, i, first = found.cursor, found.incarnation, found.first
        self._cursor, self._incarnation = c, i
        self._fence = fence(c, found.generation or None, i or None)
        self._live = found.live
        if found.pages:
            self._state = _records(found.pages)
        if self.mode == "audit":
            self.upto = c
        self._take(found.entries, self.first_page)
        if self.result is None and not self._entries:
            # Nothing read yet: the next page must still find the log's first entry.
            self._anchor = first
            if first == "" or (self.mode == "audit" and c == "0-0"):
                self._finish()  # an empty log (every entry skipped), or nothing applied

    def _continue(self, page: Sequence[Any], check: Sequence[Any]) -> None:
        exists, incarnation, first = log_fence.parse(check)
        if not exists or incarnation != self._incarnation:
            raise Moved(f"thread {self.ref} was deleted while its log was read")
        if not first or entry_key(first) > entry_key(self._anchor):
            raise Moved(f"thread {self.ref}: its log was trimmed while it was read")
        self._take(page or (), self.page)

    def _take(self, entries: Sequence[Any], asked: int) -> None:
        """Add a page of entries; finish on a short one."""
        for raw in entries:
            self._entries.append((text(raw[0]), _payload(raw[1])))
        if entries:
            self._anchor = self._entries[-1][0]
        if len(entries) < asked:  # an empty page too: nothing is left up to `upto`
            self._finish()

    def _finish(self) -> None:
        entries = self._entries
        if entries:
            version = entries[-1][0]
        elif self._live or self.mode == "audit":
            version = self._cursor
        else:  # a whole log with nothing up to `upto`: its first entries were skipped
            version = self.upto if self.upto != LAST else "0-0"
        ids, bodies = self._state
        self.result = Prefix(self.ref, version, self._fence, self._live, ids, bodies, entries)


def _records(held: Sequence[Any]) -> tuple[list[bytes], list[bytes]]:
    """The live state's ids and bodies in position order, from ``{number, page}*``."""
    numbered = sorted(zip(map(int, held[0::2]), held[1::2], strict=True))
    ids: list[bytes] = []
    bodies: list[bytes] = []
    for _, page in numbered:
        split_records(as_bytes(page), ids, bodies)
    return ids, bodies


def _payload(fields: Any) -> bytes:
    """A log entry's delta bytes (field ``d``): from the flat list Redis sends, or the
    dict redis-py makes of it (a command it parsed itself). b"" when absent."""
    if isinstance(fields, dict):
        found = fields.get(b"d", fields.get(ENTRY_PAYLOAD))
        return as_bytes(found) if found is not None else b""
    for at in range(0, len(fields) - 1, 2):
        if fields[at] in (b"d", ENTRY_PAYLOAD):
            return as_bytes(fields[at + 1])
    return b""


Outcome = Prefix | NotReplayable
Start = Callable[[str], PrefixRead]


def read_many(client: SyncRedis, refs: Sequence[str], start: Start) -> list[Outcome]:
    """The prefixes of many threads, read together: one pipelined round trip per round
    for all of them (a thread of a few dozen entries takes two). ``start(ref)`` makes a
    thread's read; one that moved is started again, up to :data:`ATTEMPTS` times."""
    readings = {n: Retrying(ref, start) for n, ref in enumerate(refs)}
    outcomes: list[Outcome | None] = [None] * len(refs)
    while readings:
        items: list[Item] = []
        spans: list[tuple[int, int, int]] = []
        for n, reading in readings.items():
            calls = reading.calls()
            spans.append((n, len(items), len(calls)))
            items += calls
        replies = run_many(client, items)
        for n, at, count in spans:
            reading = readings[n]
            reading.feed(replies[at : at + count])
            if reading.outcome is not None:
                outcomes[n] = reading.outcome
                del readings[n]
    done = [o for o in outcomes if o is not None]
    assert len(done) == len(refs)  # the loop ends once every read has its outcome
    return done


def travelling(ks: Keyspace, upto: str) -> Start:
    """How a time-travel read to ``upto`` starts (its first page with the live state)."""
    return lambda ref: PrefixRead(ks, ref, "travel", upto, first_page=PAGE)


class Retrying:
    """One thread's prefix read with its retries, for any driver (the sync one above
    runs many in lockstep, the asyncio store one): a read overtaken by a trim or a delete
    (:class:`Moved`) starts again from a new instant, up to :data:`ATTEMPTS` reads.
    ``outcome`` is set once the read ends: its prefix, or why there is none."""

    __slots__ = ("outcome", "read", "ref", "start", "tries")

    def __init__(self, ref: str, start: Start) -> None:
        self.ref, self.start = ref, start
        self.read = start(ref)
        self.tries = 1
        self.outcome: Outcome | None = None

    def calls(self) -> list[Item]:
        return self.read.calls()

    def feed(self, replies: Sequence[Any]) -> None:
        try:
            self.read.feed(replies)
        except Moved as exc:
            if self.tries >= ATTEMPTS:
                self.outcome = moving(self.ref, self.tries, exc)
            else:
                self.tries += 1
                self.read = self.start(self.ref)
            return
        except NotReplayable as exc:
            self.outcome = deleted_since(exc, self.tries)
            return
        if self.read.result is not None:
            self.outcome = self.read.result


def moving(ref: str, tries: int, last: Moved) -> NotReplayable:
    return NotReplayable(
        ref, Reason.MOVING, f"{tries} reads in a row were overtaken ({last}); try again"
    )


def deleted_since(exc: NotReplayable, tries: int) -> NotReplayable:
    """A thread missing on a read after the first was there when the first began."""
    if exc.reason is Reason.NEVER_WRITTEN and tries > 1:
        return NotReplayable(exc.ref, Reason.DELETED, "it was deleted while it was read")
    return exc

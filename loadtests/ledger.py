"""What this process sent, and therefore what each of its threads must hold.

Every write is recorded *before* it is sent (``begin``) and resolved when its answer
comes (``accept`` with the version and ids, or ``abandon`` when it was refused). A write
with no answer stays pending: the check re-sends it with its ``delta_id`` (the API
answers a retry with the original version), or marks the thread unverifiable.

The expected state is the one-delta-at-a-time fold (``core.apply_deltas``) of the
accepted deltas in version order. Deltas are folded into a base state as soon as no
write still in flight can get a smaller version, which keeps memory at the size of the
states rather than of the history: a write begun after delta D's answer arrived runs
its ingest after D's, and versions of one thread only grow.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import msgspec

from threadfold.core import BaseMessage, apply_deltas, to_messages
from threadfold.core.versions import parse_version

VersionKey = tuple[int, int]


@dataclass(frozen=True)
class Outgoing:
    """One delta on its way: ``tick`` orders it among this process's begins and answers."""

    tick: int
    thread_id: str
    messages: list[Any]
    delta_id: str | None


@dataclass(frozen=True)
class _Accepted:
    version: VersionKey
    tick: int
    messages: list[Any]
    ids: list[str]


@dataclass
class _Thread:
    base: list[BaseMessage] = field(default_factory=list)
    tail: list[_Accepted] = field(default_factory=list)
    pending: dict[int, Outgoing] = field(default_factory=dict)
    last: str | None = None
    tainted: bool = False


def stamped(messages: list[Any], ids: Sequence[str]) -> list[BaseMessage]:
    """A delta's messages as stored: converted, with the ids the API answered."""
    converted = to_messages(messages)
    return [msgspec.structs.replace(m, id=i) for m, i in zip(converted, ids, strict=True)]


class Ledger:
    """Per thread: the accepted deltas (folded where safe), the writes still in flight."""

    def __init__(self, *, merge_chunks: bool = False) -> None:
        self.merge_chunks = merge_chunks
        self._threads: dict[str, _Thread] = {}
        self._tick = 0
        # gevent greenlets never switch inside these methods; real threads (the check's
        # pool outside Locust) can, so every method holds the lock.
        self._lock = threading.Lock()

    def begin(self, thread_id: str, messages: list[Any], delta_id: str | None) -> Outgoing:
        with self._lock:
            out = Outgoing(self._next_tick(), thread_id, messages, delta_id)
            self._thread(thread_id).pending[out.tick] = out
            return out

    def accept(self, out: Outgoing, version: str, ids: Sequence[str]) -> None:
        """The API answered ``version`` and ``ids`` (a repeated answer is ignored)."""
        with self._lock:
            thread = self._thread(out.thread_id)
            if thread.pending.pop(out.tick, None) is None:
                return
            key = parse_version(version)
            thread.tail.append(_Accepted(key, self._next_tick(), out.messages, list(ids)))
            if thread.last is None or key > parse_version(thread.last):
                thread.last = version
            self._compact(thread)

    def abandon(self, out: Outgoing) -> None:
        """The API refused the delta (a 4xx): nothing of it was stored."""
        with self._lock:
            thread = self._thread(out.thread_id)
            thread.pending.pop(out.tick, None)
            self._compact(thread)

    def taint(self, thread_id: str) -> None:
        """Whether a write was stored is unknowable: the thread cannot be checked."""
        with self._lock:
            self._thread(thread_id).tainted = True

    def pending(self) -> list[Outgoing]:
        with self._lock:
            return [o for t in self._threads.values() for o in t.pending.values()]

    def threads(self) -> list[str]:
        with self._lock:
            return [name for name, t in self._threads.items() if t.last is not None]

    def settled(self, thread_id: str) -> bool:
        """No write in flight and none lost: the thread's expected state is exact."""
        with self._lock:
            thread = self._thread(thread_id)
            return not thread.pending and not thread.tainted

    def tainted(self, thread_id: str) -> bool:
        with self._lock:
            return self._thread(thread_id).tainted

    def last_version(self, thread_id: str) -> str | None:
        with self._lock:
            return self._thread(thread_id).last

    def expected(self, thread_id: str) -> list[BaseMessage]:
        """The fold of every accepted delta of the thread, in version order."""
        with self._lock:
            thread = self._thread(thread_id)
            return self._fold(thread.base, sorted(thread.tail, key=_version))

    def _fold(self, state: list[BaseMessage], deltas: list[_Accepted]) -> list[BaseMessage]:
        for delta in deltas:  # one call per delta: exactly how the deltas were written
            state = apply_deltas(
                state, [stamped(delta.messages, delta.ids)], merge_chunks=self.merge_chunks
            )
        return state

    def _compact(self, thread: _Thread) -> None:
        """Fold into the base every delta no write in flight can precede."""
        threshold = min(thread.pending, default=self._tick + 1)
        safe = [d.version for d in thread.tail if d.tick < threshold]
        if not safe:
            return
        upto = max(safe)
        ordered = sorted(thread.tail, key=_version)
        thread.base = self._fold(thread.base, [d for d in ordered if d.version <= upto])
        thread.tail = [d for d in ordered if d.version > upto]

    def _thread(self, thread_id: str) -> _Thread:
        return self._threads.setdefault(thread_id, _Thread())

    def _next_tick(self) -> int:
        self._tick += 1
        return self._tick


def _version(delta: _Accepted) -> VersionKey:
    return delta.version

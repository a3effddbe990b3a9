"""The ledger: what a deployment acknowledged, per thread, and so what each must hold."""

from __future__ import annotations

import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, NamedTuple

from threadfold.core import BaseMessage, dump_messages
from threadfold.testing.fold import as_json, fold, version_key

if TYPE_CHECKING:
    from threadfold.types import Appended, AsyncClientProtocol, ClientProtocol


class Acknowledged(NamedTuple):
    """One delta the deployment acknowledged: its answer's ``version`` and ``ids``, and
    the ``messages`` sent."""

    version: str
    messages: list[Any]
    ids: list[str]


@dataclass(frozen=True)
class Outgoing:
    """A write on its way (:meth:`Ledger.begin`): ``tick`` orders it among the ledger's
    begins and answers."""

    tick: int
    thread_id: str
    messages: list[Any]
    delta_id: str | None


@dataclass
class _Thread:
    base: list[BaseMessage] = field(default_factory=list)
    folded: int = 0  # deltas folded into base (compacting ledgers only)
    tail: list[tuple[int, Acknowledged]] = field(default_factory=list)  # (tick, delta)
    versions: set[str] = field(default_factory=set)
    pending: dict[int, Outgoing] = field(default_factory=dict)
    last: str | None = None
    tainted: bool = False


class Ledger:
    """What a deployment acknowledged, per thread, and therefore what each thread holds.

    ``merge_chunks`` must be the deployment's setting. A ``compact`` ledger folds into a
    base state every delta that no write still in flight can precede (a write begun
    after an answer arrived gets a later version), so it holds states rather than
    histories, for long load tests; it then keeps no :meth:`deltas`. Thread-safe.
    """

    def __init__(self, *, merge_chunks: bool = False, compact: bool = False) -> None:
        self.merge_chunks = merge_chunks
        self.compact = compact
        self._threads: dict[str, _Thread] = {}
        self._tick = 0
        self._lock = threading.Lock()

    # recording

    def add(
        self, thread_id: str, version: str, messages: Sequence[Any], ids: Sequence[str]
    ) -> None:
        """Record an acknowledged delta by its parts (a version already recorded for the
        thread is the same delta answered again, and is ignored)."""
        with self._lock:
            self._accept(self._thread(thread_id), version, messages, ids)

    def record(self, thread_id: str, messages: Sequence[Any], appended: Appended) -> None:
        """Record a client's answer (an :class:`~threadfold.Appended`) to ``append``."""
        self.add(thread_id, appended.version, messages, appended.ids)

    def begin(
        self, thread_id: str, messages: Sequence[Any], delta_id: str | None = None
    ) -> Outgoing:
        """Note a write before it is sent; its answer goes to :meth:`accept` or
        :meth:`abandon`. Until then the thread is not :meth:`settled`."""
        with self._lock:
            out = Outgoing(self._next_tick(), thread_id, list(messages), delta_id)
            self._thread(thread_id).pending[out.tick] = out
            return out

    def accept(self, out: Outgoing, version: str, ids: Sequence[str]) -> None:
        """The write was answered with ``version`` and ``ids`` (a repeated answer is
        ignored)."""
        with self._lock:
            thread = self._thread(out.thread_id)
            if thread.pending.pop(out.tick, None) is not None:
                self._accept(thread, version, out.messages, ids)

    def abandon(self, out: Outgoing) -> None:
        """The write was refused (a 4xx): nothing of it was stored."""
        with self._lock:
            thread = self._thread(out.thread_id)
            thread.pending.pop(out.tick, None)
            self._compact(thread)

    def taint(self, thread_id: str) -> None:
        """Whether a write was stored is unknowable: the thread cannot be checked."""
        with self._lock:
            self._thread(thread_id).tainted = True

    def append(
        self,
        client: ClientProtocol,
        thread_id: str,
        messages: Sequence[Any],
        *,
        delta_id: str | None = None,
        metadata: Mapping[str, Any] | None = None,
    ) -> Appended:
        """``client.append`` through the ledger: the answer recorded; a refusal (4xx)
        recorded as nothing stored; any other failure leaves the write pending (see
        :func:`settle`). Re-raises what the client raised."""
        out = self.begin(thread_id, messages, delta_id)
        try:
            appended = client.append(thread_id, messages, delta_id=delta_id, metadata=metadata)
        except Exception as exc:
            self._failed(out, exc)
            raise
        self.accept(out, appended.version, appended.ids)
        return appended

    async def append_async(
        self,
        client: AsyncClientProtocol,
        thread_id: str,
        messages: Sequence[Any],
        *,
        delta_id: str | None = None,
        metadata: Mapping[str, Any] | None = None,
    ) -> Appended:
        """:meth:`append` for an asyncio client."""
        out = self.begin(thread_id, messages, delta_id)
        try:
            appended = await client.append(
                thread_id, messages, delta_id=delta_id, metadata=metadata
            )
        except Exception as exc:
            self._failed(out, exc)
            raise
        self.accept(out, appended.version, appended.ids)
        return appended

    def merge(self, other: Ledger) -> None:
        """Record every delta ``other`` acknowledged (a ledger per sender, merged to
        check); its pending writes and taints come along."""
        with other._lock:
            parts = [
                (name, [d for _, d in t.tail], list(t.pending.values()), t.tainted, t.folded)
                for name, t in other._threads.items()
            ]
        if any(folded for *_, folded in parts):
            raise ValueError("a compacted ledger cannot be merged: it keeps no deltas")
        with self._lock:
            for name, deltas, pending, tainted, _ in parts:
                thread = self._thread(name)
                for d in deltas:
                    self._accept(thread, d.version, d.messages, d.ids)
                for out in pending:
                    moved = Outgoing(self._next_tick(), name, out.messages, out.delta_id)
                    thread.pending[moved.tick] = moved
                thread.tainted |= tainted

    def __getstate__(self) -> dict[str, Any]:
        """Picklable (a sender process hands its ledger back), the lock left out."""
        with self._lock:
            return {k: v for k, v in self.__dict__.items() if k != "_lock"}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._lock = threading.Lock()

    # reading

    @property
    def count(self) -> int:
        """Deltas acknowledged, over all threads."""
        with self._lock:
            return sum(t.folded + len(t.tail) for t in self._threads.values())

    def threads(self) -> list[str]:
        """The threads with an acknowledged delta, in the order first written."""
        with self._lock:
            return [name for name, t in self._threads.items() if t.last is not None]

    def items(self) -> list[tuple[str, list[Acknowledged]]]:
        """Each thread (as :meth:`threads`) with its :meth:`deltas`."""
        return [(name, self.deltas(name)) for name in self.threads()]

    def deltas(self, thread_id: str) -> list[Acknowledged]:
        """The thread's acknowledged deltas, in version order (not for a compact
        ledger, which folded them)."""
        with self._lock:
            thread = self._threads.get(thread_id)
            if thread is None:
                return []
            if thread.folded:
                raise ValueError("a compact ledger keeps no deltas it folded")
            return [d for _, d in sorted(thread.tail, key=_order)]

    def last_version(self, thread_id: str) -> str | None:
        """The highest version the thread was answered, None before any."""
        with self._lock:
            thread = self._threads.get(thread_id)
            return None if thread is None else thread.last

    def pending(self) -> list[Outgoing]:
        """The writes begun and neither accepted nor abandoned."""
        with self._lock:
            return [o for t in self._threads.values() for o in t.pending.values()]

    def settled(self, thread_id: str) -> bool:
        """No write in flight and none lost: the thread's expected state is exact."""
        with self._lock:
            thread = self._threads.get(thread_id)
            return thread is None or (not thread.pending and not thread.tainted)

    def unsettled(self) -> list[str]:
        """The threads not :meth:`settled`: a write in flight, or one lost."""
        with self._lock:
            return [name for name, t in self._threads.items() if t.pending or t.tainted]

    def tainted(self, thread_id: str) -> bool:
        with self._lock:
            thread = self._threads.get(thread_id)
            return thread is not None and thread.tainted

    def expected(self, thread_id: str) -> list[BaseMessage]:
        """What the thread must hold: the :func:`fold` of its acknowledged deltas."""
        with self._lock:
            thread = self._threads.get(thread_id)
            if thread is None:
                return []
            ordered = sorted(thread.tail, key=_order)
            return fold(
                [(d.messages, d.ids) for _, d in ordered],
                state=thread.base,
                merge_chunks=self.merge_chunks,
            )

    def expected_dump(self, thread_id: str) -> list[dict[str, Any]]:
        """:meth:`expected` as a state read returns it (LangChain's ``model_dump`` dicts,
        JSON-shaped)."""
        return as_json(dump_messages(self.expected(thread_id)))  # type: ignore[no-any-return]

    # internals (the lock held)

    def _accept(
        self, thread: _Thread, version: str, messages: Sequence[Any], ids: Sequence[str]
    ) -> None:
        if version in thread.versions:
            return
        thread.versions.add(version)
        thread.tail.append((self._next_tick(), Acknowledged(version, list(messages), list(ids))))
        if thread.last is None or version_key(version) > version_key(thread.last):
            thread.last = version
        self._compact(thread)

    def _compact(self, thread: _Thread) -> None:
        """Fold into the base every delta no write in flight can precede."""
        if not self.compact:
            return
        threshold = min(thread.pending, default=self._tick + 1)
        safe = [version_key(d.version) for tick, d in thread.tail if tick < threshold]
        if not safe:
            return
        upto = max(safe)
        ordered = sorted(thread.tail, key=_order)
        done = [d for _, d in ordered if version_key(d.version) <= upto]
        thread.base = fold(
            [(d.messages, d.ids) for d in done], state=thread.base, merge_chunks=self.merge_chunks
        )
        thread.folded += len(done)
        thread.tail = [e for e in ordered if version_key(e[1].version) > upto]

    def _failed(self, out: Outgoing, exc: Exception) -> None:
        if refused(exc):
            self.abandon(out)

    def _thread(self, thread_id: str) -> _Thread:
        return self._threads.setdefault(thread_id, _Thread())

    def _next_tick(self) -> int:
        self._tick += 1
        return self._tick


def _order(entry: tuple[int, Acknowledged]) -> tuple[int, int]:
    return version_key(entry[1].version)


def refused(exc: Exception) -> bool:
    """A 4xx other than a timeout: the write was refused, nothing of it stored."""
    status = getattr(exc, "status", None)
    return isinstance(status, int) and 400 <= status < 500 and status != 408

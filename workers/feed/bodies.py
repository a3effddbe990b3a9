"""What a follower is sent: a snapshot or a change, with messages in the form a state read
serves (LangChain's or OpenAI's, markers in place of what cannot be served).

One definition for the SSE endpoint (``data:`` of ``event: snapshot`` / ``change`` /
``deleted``, framed by :mod:`threadfold.api.feed_wire`) and the direct clients'
``subscribe()``, so that a subscriber sees the same bodies whichever door it came through.

``positions`` (a snapshot's) and an upsert's ``position`` carry the apply rule
(:mod:`threadfold.workers.feed.apply`). In the OpenAI form a stored message with
``tool_result`` blocks is served as several messages (as ``GET state`` serves it): a
snapshot repeats its position for each, and its upsert's ``message`` is the first,
``messages`` all of them.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol

import msgspec

from threadfold.core.codec import decode_stored
from threadfold.core.render import CODE, Flaw, Format, Unservable, serve
from threadfold.workers.feed.events import Change, Deleted, Reason, Removed, Snapshot, Upsert
from threadfold.workers.storage.feed_record import ORIGIN, FeedEvent, Removal
from threadfold.workers.storage.read_state import WholeThread


class Fragments(Protocol):
    """A cache of messages' JSON in LangChain's form (:mod:`threadfold.api.fragments`)."""

    def of(
        self, ids: Sequence[bytes], bodies: Sequence[bytes]
    ) -> tuple[list[msgspec.Raw], list[Flaw]]: ...


class Bodies:
    """The bodies of one thread's follower in one format (``fragments``: the process's
    JSON cache for LangChain's form, if it has one; messages are then pre-encoded)."""

    def __init__(self, thread_id: str, fmt: Format, fragments: Fragments | None = None) -> None:
        self.thread_id = thread_id
        self.format: Format = fmt
        self.fragments = fragments if fmt == "langchain" else None

    def snapshot(
        self, version: str, snapshot: WholeThread | None, reason: Reason, exists: bool
    ) -> Snapshot:
        ids = snapshot.ids if snapshot is not None else []
        bodies = snapshot.bodies if snapshot is not None else []
        messages, counts, flaws = self._messages(ids, bodies)
        held = snapshot.positions if snapshot is not None else []
        positions = [p for p, n in zip(held, counts, strict=True) for _ in range(n)]
        markers = [_marker(f, f.field, f.pointer, f.message) for f in flaws]
        return Snapshot(
            self.thread_id, version, len(ids), self.format, messages, positions, reason,
            exists, tuple(markers),
        )  # fmt: skip

    def change(self, event: FeedEvent) -> Change:
        ids = [i.encode() for _, i, _ in event.upserts]
        messages, counts, flaws = self._messages(ids, [b for _, _, b in event.upserts])
        upserts, at = [], 0
        for (position, ident, _), n in zip(event.upserts, counts, strict=True):
            served = messages[at : at + n]
            upserts.append(Upsert(position, ident, served[0], tuple(served) if n > 1 else None))
            at += n
        markers = []
        for f in flaws:  # located in the upserts, not in a page
            where = counts_index(counts, f.index)
            field, pointer = f"upserts[{where}].message", f"/upserts/{where}/message"
            what = f"cannot be served with format={f.format}: {f.reason}"
            markers.append(_marker(f, field, pointer, f"{field} (id {f.id!r}) {what}", where))
        removed = tuple(Removed(i, p) for i, p in event.removed)
        return Change(
            self.thread_id,
            event.version,
            event.prev,
            event.reset,
            removed,
            tuple(upserts),
            tuple(markers),
        )

    def deleted(self, reason: Removal) -> Deleted:
        """The thread removed (``reason``): the empty thread at version 0-0 follows."""
        return Deleted(self.thread_id, ORIGIN, reason)

    def _messages(
        self, ids: Sequence[bytes], bodies: Sequence[bytes]
    ) -> tuple[list[Any], list[int], list[Flaw]]:
        """Served messages, how many each stored one gave, and the markers among them."""
        if self.fragments is not None:
            raws, flaws = self.fragments.of(ids, bodies)
            return list(raws), [1] * len(raws), flaws
        out: list[Any] = []
        counts: list[int] = []
        flaws = []
        for ident, body in zip(ids, bodies, strict=True):
            served, flaw = serve(decode_stored(body, ident.decode()), self.format, len(out))
            out += served
            counts.append(len(served))
            if flaw is not None:
                flaws.append(flaw)
        return out, counts, flaws


def counts_index(counts: Sequence[int], served_index: int) -> int:
    """The stored message (its index) that gave the served message at ``served_index``."""
    at = 0
    for i, n in enumerate(counts):
        at += n
        if served_index < at:
            return i
    return len(counts) - 1


def _marker(
    f: Flaw, field: str, pointer: str, message: str, index: int | None = None
) -> Unservable:
    return Unservable(CODE, message, field, pointer, f.index if index is None else index, f.id)

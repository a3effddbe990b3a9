"""The wire form of ``GET /threads/{id}/events``: hub items as Server-Sent Events.

An item (:mod:`threadfold.workers.feed.subscriber`) is rendered once per format and
kept in its ``cache``: every local follower of the thread gets the same bytes. Messages
are in ``GET state``'s form for the format, by the same code (the JSON cache of
:mod:`threadfold.api.fragments` for LangChain's form, :func:`threadfold.core.render.serve`
otherwise); a message that cannot be served is its marker, named in ``unservable``.

``positions`` (a snapshot's) and an upsert's ``position`` carry the apply rule
(:mod:`threadfold.workers.feed.apply`). In the OpenAI form a stored message with
``tool_result`` blocks is served as several messages: a snapshot repeats its position
for each, and its upsert's ``message`` is the first, ``messages`` all of them.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Final

import msgspec

from threadfold.api.fragments import JsonFragments
from threadfold.api.schemas import UnservableOut
from threadfold.core.codec import decode_stored
from threadfold.core.render import CODE, Unservable, serve
from threadfold.workers.feed.subscriber import Change, Ended, Item, Start

_ENCODER: Final = msgspec.json.Encoder()
#: The first bytes of every stream: how long a browser's EventSource waits to reconnect.
RETRY: Final = b"retry: 1000\n\n"
HEARTBEAT: Final = b": heartbeat\n\n"


class SnapshotOut(msgspec.Struct):
    """``event: snapshot``: the whole state (as ``GET state``) and each message's position."""

    thread_id: str
    version: str
    total: int
    format: str
    messages: list[Any]
    positions: list[int]
    unservable: list[UnservableOut]
    reason: str
    exists: bool


class RemovedOut(msgspec.Struct):
    id: str
    position: int


class UpsertOut(msgspec.Struct, omit_defaults=True):
    position: int
    id: str
    message: Any
    messages: list[Any] | None = None  # the OpenAI form's split of one stored message


class ChangeOut(msgspec.Struct):
    """``event: change``: one committed version's net effect, on top of ``prev``."""

    thread_id: str
    version: str
    prev: str
    reset: bool
    removed: list[RemovedOut]
    upserts: list[UpsertOut]
    unservable: list[UnservableOut]


class Renderer:
    """Frames for one format and thread, with the process's JSON cache (or None)."""

    def __init__(self, thread_id: str, fmt: str, fragments: JsonFragments | None) -> None:
        self.thread_id = thread_id
        self.format = fmt
        self.fragments = fragments if fmt == "langchain" else None

    def frame(self, item: Item) -> bytes:
        """``item`` as its SSE event (cached in the item for the next follower)."""
        if isinstance(item, Ended):
            body = {"error": {"code": item.code, "message": item.message}}
            return b"event: error\ndata: " + _ENCODER.encode(body) + b"\n\n"
        cached = item.cache.get(self.format)
        if cached is None:
            cached = item.cache[self.format] = self._render(item)
        return cached

    def _render(self, item: Start | Change) -> bytes:
        if isinstance(item, Start):
            data, kind, version = self._snapshot(item), b"snapshot", item.version
        else:
            data, kind, version = self._change(item), b"change", item.event.version
        return b"event: %s\nid: %s\ndata: %s\n\n" % (kind, version.encode(), data)

    def _snapshot(self, item: Start) -> bytes:
        snap = item.snapshot
        ids = snap.ids if snap is not None else []
        bodies = snap.bodies if snap is not None else []
        messages, counts, flaws = self._messages(ids, bodies)
        held = snap.positions if snap is not None else []
        positions = [p for p, n in zip(held, counts, strict=True) for _ in range(n)]
        out = SnapshotOut(
            self.thread_id, item.version, len(ids), self.format, messages, positions,
            [_flaw(f, f.field, f.pointer, f.message) for f in flaws], item.reason, item.exists,
        )  # fmt: skip
        return _ENCODER.encode(out)

    def _change(self, item: Change) -> bytes:
        event = item.event
        ids = [i.encode() for _, i, _ in event.upserts]
        messages, counts, flaws = self._messages(ids, [b for _, _, b in event.upserts])
        upserts, at = [], 0
        for (position, ident, _), n in zip(event.upserts, counts, strict=True):
            served = messages[at : at + n]
            upserts.append(UpsertOut(position, ident, served[0], served if n > 1 else None))
            at += n
        unservable = []
        for f in flaws:  # located in the upserts, not in a page
            where = counts_index(counts, f.index)
            field, pointer = f"upserts[{where}].message", f"/upserts/{where}/message"
            what = f"cannot be served with format={f.format}: {f.reason}"
            unservable.append(_flaw(f, field, pointer, f"{field} (id {f.id!r}) {what}", where))
        removed = [RemovedOut(i, p) for i, p in event.removed]
        out = ChangeOut(
            self.thread_id, event.version, event.prev, event.reset, removed, upserts, unservable
        )
        return _ENCODER.encode(out)

    def _messages(
        self, ids: Sequence[bytes], bodies: Sequence[bytes]
    ) -> tuple[list[Any], list[int], list[Unservable]]:
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


def _flaw(
    f: Unservable, field: str, pointer: str, message: str, index: int | None = None
) -> UnservableOut:
    return UnservableOut(CODE, message, field, pointer, f.index if index is None else index, f.id)

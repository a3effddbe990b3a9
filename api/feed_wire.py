"""The wire form of ``GET /threads/{id}/events``: hub items as Server-Sent Events.

An item (:mod:`threadfold.workers.feed.subscriber`) is rendered once per format and
kept in its ``cache``: every local follower of the thread gets the same bytes. The
``data:`` of a snapshot, a change or a deleted event is
:mod:`threadfold.workers.feed.bodies`' (one definition for this endpoint and the direct
clients): messages in ``GET state``'s form for the format, by the same code (the
process's JSON cache, :mod:`threadfold.api.fragments`, for LangChain's form), a message
that cannot be served as its marker. Each has its version as its ``id``: a deleted
event's is 0-0, the empty thread it leaves, so a stream resumed from it gets the
changes of the thread written again (they chain on 0-0), nothing while the thread
stays absent, and a snapshot when the feed no longer reaches back to 0-0.
"""

from __future__ import annotations

from typing import Final

import msgspec

from threadfold.api.fragments import JsonFragments
from threadfold.core.render import Format
from threadfold.workers.feed.bodies import Bodies
from threadfold.workers.feed.subscriber import Beat, Ended, Item, Published, Start, ThreadRemoved

_ENCODER: Final = msgspec.json.Encoder()
#: The first bytes of every stream: how long a browser's EventSource waits to reconnect.
RETRY: Final = b"retry: 1000\n\n"
HEARTBEAT: Final = b": heartbeat\n\n"


class Renderer:
    """Frames for one thread and format, with the process's JSON cache (or None)."""

    def __init__(self, thread_id: str, fmt: Format, fragments: JsonFragments | None) -> None:
        self.format = fmt
        self.bodies = Bodies(thread_id, fmt, fragments)

    def frame(self, item: Item) -> bytes:
        """``item`` as its SSE event (cached in the item for the thread's next follower
        in this format)."""
        if isinstance(item, Beat):
            return HEARTBEAT
        if isinstance(item, Ended):
            body = {"error": {"code": item.code, "message": item.message}}
            return b"event: error\ndata: " + _ENCODER.encode(body) + b"\n\n"
        cached = item.cache.get(self.format)
        if cached is None:
            cached = item.cache[self.format] = self._render(item)
        return cached

    def _render(self, item: Start | Published | ThreadRemoved) -> bytes:
        if isinstance(item, Start):
            kind, version = b"snapshot", item.version
            data = _ENCODER.encode(
                self.bodies.snapshot(version, item.snapshot, item.reason, item.exists)
            )
        elif isinstance(item, ThreadRemoved):
            kind, version = b"deleted", item.version
            data = _ENCODER.encode(self.bodies.deleted(item.reason))
        else:
            kind, version = b"change", item.event.version
            data = _ENCODER.encode(self.bodies.change(item.event))
        return b"event: %s\nid: %s\ndata: %s\n\n" % (kind, version.encode(), data)

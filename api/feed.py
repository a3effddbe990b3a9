"""``GET /threads/{thread_id}/events``: a thread's changes as Server-Sent Events.

The request is checked like ``GET state`` (auth, tenant, thread id, query), then the
answer streams from the process's one feed reader (:class:`threadfold.workers.feed.hub.Hub`):
a snapshot (unless resuming), a change per committed version, a deleted event when the
thread is removed, heartbeats between, an error event when the follower read too
slowly. The wire form is :mod:`threadfold.api.feed_wire`'s.

:class:`EventStream` is a Response whose body it writes itself: it watches the client's
disconnect while it waits for events, so a client that leaves frees its follower at
once (not at the next write), and a client that stops reading after it was dropped as
too slow is cut after a grace period (its socket blocks the write of the error event).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from typing import TYPE_CHECKING, Final

from starlette.requests import Request
from starlette.responses import Response
from starlette.types import Receive, Scope, Send

from threadfold.api.feed_wire import RETRY, Renderer
from threadfold.api.guard import on_shutdown
from threadfold.workers.feed.hub import Hub
from threadfold.workers.feed.subscriber import Beat, Ended, Item, Subscriber
from threadfold.workers.metrics import Metrics
from threadfold.workers.threads.query import events_query
from threadfold.workers.threads.service import AsyncThreads
from threadfold.workers.threads.steps import target

if TYPE_CHECKING:  # the app imports this module
    from threadfold.api.app import Resources

log = logging.getLogger("threadfold.api")

#: What ``CLIENT LIST`` shows of the feed reader's one connection.
HUB_CLIENT_NAME: Final = "threadfold-api-feed"

#: How long a subscriber dropped as too slow has to take its error event before its
#: connection is cut (its queue is freed at once; only the socket's buffers remain).
GRACE_SECONDS: Final = 30.0
#: Items written at most in one send (fewer, larger writes to a follower behind).
_BATCH: Final = 64
_HEADERS: Final = {
    "Cache-Control": "no-cache",
    "X-Accel-Buffering": "no",  # nginx: pass each event on, do not buffer the stream
}


def make_hub(threads: AsyncThreads, max_subscribers: int) -> Hub:
    """The process's feed reader: the service's hub, on a connection of its own (one for
    any number of followers), which a server shutdown ends."""
    hub = threads.hub(max_subscribers=max_subscribers)
    on_shutdown(hub.shutting_down)  # a stream ends only when asked to
    return hub


async def get_events(request: Request) -> Response:
    """The route's handler: the request checked, the stream opened. The app's _route
    counts (and times) only this opening; the stream runs after it returned."""
    res: Resources = request.app.state.resources
    tenant = res.auth.tenant(request.headers.get("authorization"))
    if request.method == "HEAD":  # the headers only: no stream that would never end
        return Response(None, 200, _HEADERS, media_type=EventStream.media_type)
    return open_stream(request, tenant, res)


def open_stream(request: Request, tenant: str, res: Resources) -> EventStream:
    """The checked request's stream (raises the 400 / 422 / 503 it answers instead)."""
    at = target(tenant, request.path_params["thread_id"])
    # An empty Last-Event-ID is no id (what an EventSource holds before any id came).
    last_event_id = request.headers.get("last-event-id") or None
    fmt, after = events_query(request.query_params.multi_items(), last_event_id)
    assert res.hub is not None  # build_resources made one
    sub = res.threads.subscriber(at, after)  # 503 at the process's cap, or shutting down
    res.metrics.set_gauge("sse_subscribers", res.hub.subscribers)
    renderer = Renderer(at.thread_id, fmt, res.fragments)
    return EventStream(res.hub, sub, renderer, res.settings.sse_heartbeat_seconds, res.metrics)


class EventStream(Response):
    """The streamed answer; ``hub.unsubscribe`` runs however it ends."""

    media_type = "text/event-stream"

    def __init__(
        self, hub: Hub, sub: Subscriber, renderer: Renderer, heartbeat: float, metrics: Metrics
    ) -> None:
        super().__init__(None, 200, _HEADERS)
        # No length: the body is a stream (Response counts a None body as 0 bytes).
        self.raw_headers = [(k, v) for k, v in self.raw_headers if k != b"content-length"]
        self.hub, self.sub, self.renderer = hub, sub, renderer
        self.heartbeat = heartbeat
        self.metrics = metrics
        self.idle = True  # nothing written since the last heartbeat period began

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        pump = asyncio.create_task(self._pump(send))
        gone = asyncio.create_task(_disconnected(receive))
        cut = asyncio.create_task(self._grace_after_drop())
        beat = asyncio.create_task(self._beat())
        first: set[asyncio.Task[None]] = set()
        try:
            first, _ = await asyncio.wait({pump, gone, cut}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            self.hub.unsubscribe(self.sub)
            self.metrics.set_gauge("sse_subscribers", self.hub.subscribers)
            if self.sub.ended is not None:
                self.metrics.add(f"sse_subscribers_dropped|reason={self.sub.ended.code}")
            for task in (pump, gone, cut, beat):
                task.cancel()
            for task in (pump, gone, cut, beat):
                with contextlib.suppress(BaseException):
                    await task
        if pump in first and pump.exception() is not None:
            error = pump.exception()
            if not isinstance(error, OSError):  # a client gone mid-write is no error
                log.error("event stream of %s failed", self.sub.ref, exc_info=error)
        elif cut in first:
            log.info("cut a subscriber dropped as too slow that did not read its error")

    async def _pump(self, send: Send) -> None:
        await send({"type": "http.response.start", "status": 200, "headers": self.raw_headers})
        await send({"type": "http.response.body", "body": RETRY, "more_body": True})
        ended = False
        while not ended:
            # No timeout on the wait: wait_for made a task and a timer per event (a fifth
            # of the API's CPU per event at 1,000 subscribers); _beat queues heartbeats.
            chunk, ended = self._frames(await self.sub.next())
            await send({"type": "http.response.body", "body": chunk, "more_body": not ended})
            self.idle = False

    async def _beat(self) -> None:
        """A heartbeat after a whole period with nothing written (one timer per stream
        and period, not per event): so one goes out within two periods of silence."""
        while True:
            await asyncio.sleep(self.heartbeat)
            if self.idle:
                self.sub.beat()
            self.idle = True

    def _frames(self, first: Item) -> tuple[bytes, bool]:
        """``first`` and what else is queued (up to a batch), as one write."""
        parts, item, sent = [], first, 0
        while True:
            parts.append(self.renderer.frame(item))
            if isinstance(item, Ended):
                break
            sent += not isinstance(item, Beat)
            if len(parts) >= _BATCH or (nxt := self.sub.next_nowait()) is None:
                break
            item = nxt
        if sent:
            self.metrics.add("sse_events_sent", sent)
        return b"".join(parts), isinstance(item, Ended)

    async def _grace_after_drop(self) -> None:
        """Ends once the follower was dropped and a grace period passed (the pump had
        that long to write the error event to a client that does not read)."""
        while not self.sub.dropped:
            await asyncio.sleep(self.heartbeat)
        await asyncio.sleep(max(2 * self.heartbeat, GRACE_SECONDS))


async def _disconnected(receive: Receive) -> None:
    while (await receive())["type"] != "http.disconnect":
        pass

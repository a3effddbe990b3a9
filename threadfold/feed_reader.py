"""``subscribe()`` of the HTTP clients: ``GET /threads/{id}/events`` (Server-Sent Events,
parsed by httpx-sse), reopened with ``Last-Event-ID`` whenever it ends.

The server sends a snapshot or the changes after the last id, so a reopened stream
carries on exactly where the last one stopped (docs/feed.md). The stream is reopened,
with backoff, after a dropped connection, an answer of 502/503/504 (an API restarting,
a process at its subscriber cap), a stream the server ended (``event: error``: too slow,
shutting down) and a silence longer than :data:`SILENCE` (the server sends a heartbeat
every few seconds, so a silent stream is a dead one). Any other refusal (a bad
version, a thread id or a key refused) is raised. The subscription goes on until the
caller leaves the loop.

:class:`Reader` is what both loops share: the request to send, and the event each
message of the stream is.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Iterator
from typing import Final

import httpx
import msgspec
from httpx_sse import EventSource, ServerSentEvent

from threadfold import wire
from threadfold.core.errors import ThreadfoldError
from threadfold.errors import RequestError, Unavailable
from threadfold.feed import Change, Deleted, Event, Snapshot
from threadfold.retry import RetryPolicy, retried, unreachable
from threadfold.workers.threads import query

#: Seconds without a byte (heartbeats included) after which a stream is reopened.
SILENCE: Final = 30.0

_SNAPSHOT: Final = msgspec.json.Decoder(Snapshot)
_CHANGE: Final = msgspec.json.Decoder(Change)
_DELETED: Final = msgspec.json.Decoder(Deleted)


class StreamEnded(ThreadfoldError):
    """The server ended the stream (``event: error``) or it broke the chain: reopen."""


class Reader:
    """One subscription's request and the version it holds."""

    def __init__(self, thread_id: str, after: str | None, fmt: str, shown_url: str) -> None:
        self.path = wire.thread_path(thread_id, "/events")
        self.version = query.version(after, "after") if after is not None else None
        self.params = {"format": query.format_of(fmt)}
        self.shown_url = shown_url

    def headers(self) -> dict[str, str]:
        headers = {"accept": "text/event-stream", "cache-control": "no-cache"}
        if self.version is not None:
            headers["last-event-id"] = self.version
        return headers

    def event(self, sse: ServerSentEvent) -> Event | None:
        """The event ``sse`` carries (None for other kinds); :class:`StreamEnded` when
        the server ended the stream or sent a change that does not follow on."""
        if sse.event == "snapshot":
            found: Event = _SNAPSHOT.decode(sse.data)
        elif sse.event == "change":
            found = _CHANGE.decode(sse.data)
            if found.prev != self.version:
                raise StreamEnded(f"change {found.version} applies on {found.prev}")
        elif sse.event == "deleted":  # applies on any version; its id, 0-0, resumes
            found = _DELETED.decode(sse.data)
        elif sse.event == "error":
            raise StreamEnded(sse.data)
        else:
            return None
        self.version = found.version
        return found

    def refused(self, response: httpx.Response, body: bytes) -> RequestError:
        return wire.failure(response.status_code, body, response.headers.get("retry-after"))

    def failure(self, exc: Exception) -> RequestError:
        """What an ended stream is: reopened after a wait if :func:`retried`, else raised
        (a stream the server ended is reopened like one that dropped)."""
        if isinstance(exc, RequestError):
            return exc
        if isinstance(exc, httpx.TransportError):
            found = unreachable(exc, self.shown_url)
            if found is not None:
                return found
        return Unavailable(f"the stream from {self.shown_url} ended: {exc}", status=None)


def _timeout(connect: float) -> httpx.Timeout:
    return httpx.Timeout(connect, read=SILENCE)


def follow(
    http: httpx.Client, reader: Reader, policy: RetryPolicy, connect: float
) -> Iterator[Event]:
    failures = 0
    while True:
        try:
            with http.stream(
                "GET",
                reader.path,
                params=reader.params,
                headers=reader.headers(),
                timeout=_timeout(connect),
            ) as response:
                if response.status_code != 200:
                    raise reader.refused(response, response.read())
                for sse in EventSource(response).iter_sse():
                    event = reader.event(sse)
                    if event is not None:
                        failures = 0
                        yield event
            failure = reader.failure(StreamEnded("closed by the server"))
        except (httpx.TransportError, RequestError, StreamEnded) as exc:
            failure = reader.failure(exc)
        if not retried(failure):
            raise failure
        time.sleep(policy.delay(min(failures, 16), failure))
        failures += 1


async def afollow(
    http: httpx.AsyncClient, reader: Reader, policy: RetryPolicy, connect: float
) -> AsyncIterator[Event]:
    failures = 0
    while True:
        try:
            async with http.stream(
                "GET",
                reader.path,
                params=reader.params,
                headers=reader.headers(),
                timeout=_timeout(connect),
            ) as response:
                if response.status_code != 200:
                    raise reader.refused(response, await response.aread())
                async for sse in EventSource(response).aiter_sse():
                    event = reader.event(sse)
                    if event is not None:
                        failures = 0
                        yield event
            failure = reader.failure(StreamEnded("closed by the server"))
        except (httpx.TransportError, RequestError, StreamEnded) as exc:
            failure = reader.failure(exc)
        if not retried(failure):
            raise failure
        await asyncio.sleep(policy.delay(min(failures, 16), failure))
        failures += 1

"""The direct clients (``threadfold.AsyncClient``, and ``threadfold.Client`` generated
from it): the front over the thread service in process (Redis and the broker, no HTTP).

For backends that run beside the pipeline: appends go straight into the threads' logs,
reads straight to the state in Redis, each operation run by the thread service
(:mod:`threadfold.workers.threads.service`) in this client's tenant: what
the HTTP API answers for the same call, result and error. Calls made in one turn of the
event loop share a Redis round trip (the API's own producer does the same), and the
wake-ups of a window are published together from a background thread. The asyncio
client is for one event loop; the sync one is thread-safe, meant to be shared by a
process's threads.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Iterable
from typing import TypeVar

from threadfold import args
from threadfold._async.front import AsyncFront
from threadfold.args import DeltaLike
from threadfold.core.errors import ClientClosed
from threadfold.core.keys import DEFAULT_TENANT
from threadfold.core.render import Format
from threadfold.core.results import Appended
from threadfold.workers.feed.events import Event
from threadfold.workers.settings import Settings
from threadfold.workers.threads import operations as ops
from threadfold.workers.threads import query
from threadfold.workers.wiring import Waker, open_athreads, settings_for

R = TypeVar("R")


class AsyncClient(AsyncFront):
    """Appends and reads threads directly in Redis, waking workers through the broker.

    Made with no argument, it reads the ``THREADFOLD_*`` settings; ``redis_url`` and
    ``broker_url`` override theirs, ``settings`` replaces them. ``tenant`` is the
    keyspace the threads live in (an API key bound to a tenant sees the same threads).
    ``waker`` publishes the wake-ups (by default Celery tasks on the settings' queue);
    the calls of every ``wake_window`` seconds share one publish, from a background
    thread.
    """

    def __init__(
        self,
        redis_url: str | None = None,
        broker_url: str | None = None,
        *,
        settings: Settings | None = None,
        tenant: str = DEFAULT_TENANT,
        waker: Waker | None = None,
        wake_window: float = 0.005,
    ) -> None:
        resolved = settings_for(settings, redis_url, broker_url)
        self.tenant = query.tenant(tenant)
        self._engine = open_athreads(
            resolved, waker=waker, wake_window=query.timeout(wake_window, "wake_window")
        )
        self.settings = resolved
        self._threads = self._engine.threads
        self._closed = False

    async def _run(self, op: ops.Op[R]) -> R:
        if self._closed:
            raise ClientClosed("this client is closed")
        return await self._threads.run(self.tenant, op)

    async def append_stream(
        self, bulks: Iterable[Iterable[DeltaLike]]
    ) -> AsyncIterator[list[Appended]]:
        if self._closed:
            raise ClientClosed("this client is closed")
        stream = self._threads.append_stream(self.tenant, args.bulks(bulks))
        async with contextlib.aclosing(stream):
            async for done in stream:
                yield done

    async def subscribe(
        self, thread_id: str, *, after: str | None = None, format: Format = "langchain"
    ) -> AsyncIterator[Event]:
        """The thread's events, for as long as the caller iterates: a snapshot (unless
        resuming ``after`` a version it holds), then one change per version; see
        :mod:`threadfold.feed`. Reconnects by itself; leave the loop (or close the
        iterator) to stop. Closing the client ends them (:class:`~threadfold.ClientClosed`)."""
        if self._closed:
            raise ClientClosed("this client is closed")
        events = self._threads.subscribe(self.tenant, thread_id, after=after, format=format)
        # closing: leaving this loop ends the subscription now, not when the collector
        # finalizes the inner generator.
        async with contextlib.aclosing(events):
            async for event in events:
                yield event

    async def close(self) -> None:
        """Publish the pending wake-ups, then close the connections (the subscriptions
        end first)."""
        if self._closed:
            return
        self._closed = True
        await self._engine.close()

    def __repr__(self) -> str:  # no URL: they may carry passwords
        kind = type(self).__name__
        return f"<threadfold.{kind} tenant={self.tenant!r} queue={self.settings.queue!r}>"

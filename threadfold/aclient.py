"""``threadfold.AsyncClient``: the asyncio twin of :class:`threadfold.Client`.

Calls made in one turn of the event loop share a Redis round trip (the API's own
producer does the same), and the wake-ups of a window are published together from a
thread, never from the event loop. Use one client per event loop.
"""

from __future__ import annotations

import asyncio
import contextlib
import sys
from collections.abc import AsyncIterator, Iterable, Sequence
from types import TracebackType
from typing import Any, Self

from threadfold import args, direct, subscription
from threadfold.core.keys import DEFAULT_TENANT, make_ref
from threadfold.errors import ClientClosed
from threadfold.live import Event
from threadfold.types import Appended, DeltaLike, Format, State, Status
from threadfold.workers import entry
from threadfold.workers.feed.bodies import Bodies
from threadfold.workers.feed.hub import Hub
from threadfold.workers.ingest.producer import Delta
from threadfold.workers.ingest.wakeup import CoalescingWaker, Waker
from threadfold.workers.settings import Settings
from threadfold.workers.threads import reads


class AsyncClient:
    """Appends and reads threads directly in Redis (asyncio); see :class:`threadfold.Client`
    for the arguments."""

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
        wired = direct.wiring(
            redis_url,
            broker_url,
            settings=settings,
            tenant=tenant,
            waker=waker,
            wake_window=wake_window,
        )
        self.settings, self.tenant, self._celery = wired.settings, wired.tenant, wired.celery
        self._waker = CoalescingWaker(wired.waker, window=wired.window)
        # No automatic reconnect-and-retry: see threadfold.Client.
        self._redis = entry.aredis(self.settings, retries=0, name=direct.CONNECTION_NAME)
        self._producer = entry.aproducer(self.settings, self._redis, self._waker)
        self._store = entry.astore(self.settings, self._redis)
        self._hub: Hub | None = None  # made by the first subscribe()
        self._closed = False

    async def append(
        self, thread_id: str, messages: Sequence[Any], *, delta_id: str | None = None
    ) -> Appended:
        self._check_open()
        delta = Delta(args.thread_id(thread_id), messages, delta_id, self.tenant)
        with direct.translated():
            [result] = await self._producer.enqueue_many([delta], path="")
        return direct.appended(result)

    async def append_many(self, deltas: Iterable[DeltaLike]) -> list[Appended]:
        self._check_open()
        batch = [Delta(*d, self.tenant) for d in args.deltas(deltas)]
        with direct.translated():
            results = await self._producer.enqueue_many(batch, path="deltas")
        return [direct.appended(r) for r in results]

    async def state(  # noqa: PLR0913  # the public read's keyword arguments: GET /state's query
        self,
        thread_id: str,
        *,
        min_version: str | None = None,
        wait: float | None = None,
        format: Format = "langchain",
        limit: int | None = None,
        after: str | None = None,
        before: str | None = None,
        at_version: str | None = None,
    ) -> State:
        self._check_open()
        name = args.thread_id(thread_id)
        with direct.translated():
            query = reads.query(
                format=format,
                min_version=min_version,
                at_version=at_version,
                wait=wait,
                limit=limit,
                before=before,
                after=after,
            )
            answer = await reads.aread(
                self._store,
                make_ref(self.tenant, name),
                name,
                query,
                merge_chunks=self.settings.merge_chunks,
            )
        return direct.state(name, answer)

    async def status(self, thread_id: str) -> Status:
        self._check_open()
        name = args.thread_id(thread_id)
        with direct.translated():
            found = await self._store.status(make_ref(self.tenant, name))
        return direct.status(name, found)

    async def delete(self, thread_id: str) -> None:
        self._check_open()
        name = args.thread_id(thread_id)
        with direct.translated():
            deleted = await self._store.delete(make_ref(self.tenant, name))
        if not deleted:
            raise direct.not_found(name)

    async def wait_for(self, thread_id: str, version: str, timeout: float) -> str:
        self._check_open()
        name = args.thread_id(thread_id)
        wanted, seconds = args.version(version), args.timeout(timeout)
        with direct.translated():
            return await reads.await_for(
                self._store, make_ref(self.tenant, name), name, wanted, seconds
            )

    async def subscribe(
        self, thread_id: str, *, after: str | None = None, format: Format = "langchain"
    ) -> AsyncIterator[Event]:
        """The asyncio twin of :meth:`threadfold.Client.subscribe`. All of the client's
        subscriptions share one Pub/Sub connection; closing the client ends them
        (:class:`~threadfold.ClientClosed`)."""
        self._check_open()
        name = args.thread_id(thread_id)
        resume = args.version(after, "after") if after is not None else None
        bodies = Bodies(name, args.format_of(format))
        if self._hub is None:
            self._hub = entry.ahub(
                self.settings,
                self._store,
                name=direct.CONNECTION_NAME,
                queue_events=subscription.QUEUE_EVENTS,
                max_subscribers=sys.maxsize,
            )
        ref = make_ref(self.tenant, name)
        # aclosing: leaving this loop ends the subscription now, not when the collector
        # finalizes the inner generator.
        events = subscription.ahub_follow(self._hub, ref, bodies, resume)
        async with contextlib.aclosing(events):
            async for event in events:
                yield event

    async def close(self) -> None:
        """Publish the pending wake-ups, then close the connections."""
        if self._closed:
            return
        self._closed = True
        try:
            if self._hub is not None:
                await self._hub.close()  # its subscriptions end, its connection closes
            await self._waker.close()
        finally:
            await self._redis.aclose()
            if self._celery is not None:
                await asyncio.to_thread(self._celery.close)

    def _check_open(self) -> None:
        if self._closed:
            raise ClientClosed("this client is closed")

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self,
        kind: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.close()

    def __repr__(self) -> str:  # no URL: they may carry passwords
        return f"<threadfold.AsyncClient tenant={self.tenant!r} queue={self.settings.queue!r}>"

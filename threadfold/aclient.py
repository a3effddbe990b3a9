"""``threadfold.AsyncClient``: the asyncio twin of :class:`threadfold.Client`.

Calls made in one turn of the event loop share a Redis round trip (the API's own
producer does the same), and the wake-ups of a window are published together from a
thread, never from the event loop. Use one client per event loop.

Every method is the thread service's
(:class:`threadfold.workers.threads.service.AsyncThreads`) in this client's tenant.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Iterable, Mapping, Sequence
from types import TracebackType
from typing import Any, Self

from threadfold import args
from threadfold.core.errors import ClientClosed
from threadfold.core.keys import DEFAULT_TENANT
from threadfold.types import (
    UNSET,
    Appended,
    Context,
    Copied,
    Counter,
    DeltaLike,
    Format,
    Pruned,
    Searched,
    State,
    Status,
    Strategy,
    Unset,
)
from threadfold.workers.feed.events import Event
from threadfold.workers.settings import Settings
from threadfold.workers.threads import lifecycle, query
from threadfold.workers.wiring import Waker, open_athreads, settings_for


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
        resolved = settings_for(settings, redis_url, broker_url)
        self.tenant = query.tenant(tenant)
        self._engine = open_athreads(
            resolved, waker=waker, wake_window=query.timeout(wake_window, "wake_window")
        )
        self.settings = resolved
        self._threads = self._engine.threads
        self._closed = False

    async def append(
        self,
        thread_id: str,
        messages: Sequence[Any],
        *,
        delta_id: str | None = None,
        metadata: Mapping[str, Any] | None = None,
    ) -> Appended:
        self._check_open()
        return await self._threads.append(
            self.tenant, thread_id, messages, delta_id, metadata
        )

    async def append_many(self, deltas: Iterable[DeltaLike]) -> list[Appended]:
        self._check_open()
        return await self._threads.append_many(self.tenant, args.deltas(deltas))

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
        query.thread_id(thread_id)  # the id is refused before the query, as over HTTP
        asked = query.query(
            format=format,
            min_version=min_version,
            at_version=at_version,
            wait=wait,
            limit=limit,
            before=before,
            after=after,
        )
        return await self._threads.state(self.tenant, thread_id, asked)

    async def context(  # noqa: PLR0913  # trim_messages' arguments and a read's, as GET /context takes them
        self,
        thread_id: str,
        max_tokens: int,
        *,
        strategy: Strategy = "last",
        include_system: bool = False,
        start_on: str | Sequence[str] | None = None,
        end_on: str | Sequence[str] | None = None,
        counter: Counter = "approximate",
        format: Format = "langchain",
        min_version: str | None = None,
        wait: float | None = None,
        at_version: str | None = None,
    ) -> Context:
        """The thread's context window: its messages trimmed to ``max_tokens`` as
        LangChain's ``trim_messages`` trims, tool calls and answers kept together (see
        docs/clients.md)."""
        self._check_open()
        query.thread_id(thread_id)  # the id is refused before the query, as over HTTP
        asked = query.context(
            max_tokens=max_tokens,
            strategy=strategy,
            include_system=include_system,
            start_on=_listed(start_on),
            end_on=_listed(end_on),
            counter=counter,
            format=format,
            min_version=min_version,
            at_version=at_version,
            wait=wait,
        )
        return await self._threads.context(self.tenant, thread_id, asked)

    async def status(self, thread_id: str) -> Status:
        self._check_open()
        return await self._threads.status(self.tenant, thread_id)

    async def delete(self, thread_id: str) -> None:
        self._check_open()
        await self._threads.delete(self.tenant, thread_id)

    async def wait_for(self, thread_id: str, version: str, timeout: float) -> str:
        self._check_open()
        return await self._threads.wait_for(self.tenant, thread_id, version, timeout)

    async def update(
        self,
        thread_id: str,
        *,
        metadata: Mapping[str, Any] | Unset = UNSET,
        ttl_seconds: float | Unset | None = UNSET,
        pinned: bool | Unset = UNSET,
    ) -> Status:
        """Change the thread's metadata (merged; a None value deletes its key), its own
        TTL (None: the deployment's) and its pin, together or not at all; its status."""
        self._check_open()
        change = lifecycle.update(metadata, ttl_seconds, pinned)
        return await self._threads.update(self.tenant, thread_id, change)

    async def search(
        self,
        *,
        metadata: Mapping[str, Any] | None = None,
        status: str | None = None,
        sort: str = "activity",
        limit: int = 20,
        cursor: str | None = None,
    ) -> Searched:
        """A page of this tenant's threads holding every ``metadata`` value (and in
        ``status``), latest first by ``sort``; pass its ``cursor`` for the next."""
        self._check_open()
        asked = lifecycle.searched(
            metadata=metadata, status=status, sort=sort, limit=limit, cursor=cursor
        )
        return await self._threads.search(self.tenant, asked)

    async def count(
        self, *, metadata: Mapping[str, Any] | None = None, status: str | None = None
    ) -> int:
        """How many threads :meth:`search` would find."""
        self._check_open()
        asked = lifecycle.searched(metadata=metadata, status=status)
        return (await self._threads.count(self.tenant, asked)).count

    async def copy(
        self,
        thread_id: str,
        to: str,
        *,
        at_version: str | None = None,
        metadata: Mapping[str, Any] | None = None,
    ) -> Copied:
        """A new thread ``to`` whose state is this one's at ``at_version`` (default: now),
        with its metadata and ``metadata``'s changes; Conflict when ``to`` exists."""
        self._check_open()
        source = query.thread_id(thread_id)
        plan = lifecycle.copy_of(
            self.tenant, source, to, at_version=at_version, metadata=metadata
        )
        return await self._threads.copy(self.tenant, source, plan)

    async def prune(
        self,
        *,
        prefix: str = "",
        metadata: Mapping[str, Any] | None = None,
        idle_seconds: float | None = None,
        dry_run: bool = False,
    ) -> Pruned:
        """Remove this tenant's threads whose id starts with ``prefix``, holding every
        ``metadata`` value, idle ``idle_seconds`` or more; never a pinned one."""
        self._check_open()
        asked = lifecycle.pruned(
            tenant=self.tenant,
            prefix=prefix,
            metadata=metadata,
            idle_seconds=idle_seconds,
            dry_run=dry_run,
        )
        return await self._threads.prune(asked)

    async def subscribe(
        self, thread_id: str, *, after: str | None = None, format: Format = "langchain"
    ) -> AsyncIterator[Event]:
        """The asyncio twin of :meth:`threadfold.Client.subscribe`. All of the client's
        subscriptions share one Pub/Sub connection; closing the client ends them
        (:class:`~threadfold.ClientClosed`)."""
        self._check_open()
        events = self._threads.subscribe(self.tenant, thread_id, after=after, format=format)
        # aclosing: leaving this loop ends the subscription now, not when the collector
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


def _listed(types: str | Sequence[str] | None) -> str | list[str] | None:
    """Message types as the query takes them (a single one, or a list)."""
    return types if types is None or isinstance(types, str) else list(types)

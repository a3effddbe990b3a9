"""``threadfold.HttpClient`` and ``AsyncHttpClient``: the same calls as the direct
clients, against a remote deployment's HTTP API (httpx).

Connections are pooled and kept alive (one client serves many calls, and threads for
the sync one); calls that got no answer, or a 502/503/504, are sent again with backoff
(:mod:`threadfold.retry`), appends with the same ``delta_id``, so each is applied once.
"""

from __future__ import annotations

import asyncio
import math
import time
from collections.abc import AsyncIterator, Iterable, Iterator, Mapping, Sequence
from types import TracebackType
from typing import Any, Self, TypeVar

import httpx

from threadfold import feed_reader, wire
from threadfold.errors import ClientClosed, RequestError
from threadfold.feed import Event
from threadfold.retry import RetryPolicy, retried, unreachable
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

T = TypeVar("T")


class _Base:
    """What both HTTP clients hold: where to go, how to authenticate, when to retry."""

    def __init__(
        self,
        base_url: str,
        api_key: str | None,
        *,
        timeout: float,
        retries: int,
        backoff: float,
        max_backoff: float,
    ) -> None:
        url = httpx.URL(base_url)
        if url.scheme not in ("http", "https") or not url.host:
            raise ValueError("base_url: expected an http:// or https:// URL with a host")
        self.base_url = base_url
        # What messages and reprs show of it: no credentials.
        self.shown_url = str(url.copy_with(username=None, password=None))
        self.policy = RetryPolicy(retries, backoff, max_backoff)
        if (
            isinstance(timeout, bool)
            or not isinstance(timeout, int | float)
            or not (0 < timeout < math.inf)
        ):
            raise ValueError(f"timeout: expected a finite number of seconds > 0, got {timeout!r}")
        self.timeout = float(timeout)
        self.headers = {"accept": "application/json", "content-type": "application/json"}
        if api_key is not None:
            self.headers["authorization"] = f"Bearer {api_key}"
        self._closed = False

    def _check_open(self) -> None:
        if self._closed:
            raise ClientClosed("this client is closed")

    def _timeout(self, exchange: wire.Exchange[Any]) -> httpx.Timeout:
        # A read-your-writes read may be held by the server for its wait.
        return httpx.Timeout(self.timeout, read=self.timeout + exchange.wait)

    def _answer(self, exchange: wire.Exchange[T], response: httpx.Response, attempt: int) -> T:
        """The call's result, or the RequestError its answer is, raised."""
        if response.is_success:
            return exchange.read(response.content)
        if response.status_code == 404 and attempt > 0 and exchange.gone_is_done:
            return exchange.read(b"")
        raise wire.failure(
            response.status_code, response.content, response.headers.get("retry-after")
        )

    def _unreachable(self, exc: httpx.TransportError) -> RequestError:
        failure = unreachable(exc, self.shown_url)
        if failure is None:
            raise exc
        failure.__cause__ = exc
        return failure

    def _give_up(self, failure: RequestError, attempt: int) -> bool:
        return not retried(failure) or attempt >= self.policy.retries

    def __repr__(self) -> str:  # never the API key
        return f"<threadfold.{type(self).__name__} {self.shown_url}>"


class HttpClient(_Base):
    """The HTTP API of a deployment at ``base_url``, with ``api_key`` as its bearer token
    when it has keys. ``timeout`` bounds each attempt (a read's ``wait`` is added to it);
    ``retries``, ``backoff`` and ``max_backoff``: see :class:`threadfold.retry.RetryPolicy`.
    Thread-safe."""

    def __init__(
        self,
        base_url: str,
        api_key: str | None = None,
        *,
        timeout: float = 10.0,
        retries: int = 3,
        backoff: float = 0.1,
        max_backoff: float = 2.0,
    ) -> None:
        super().__init__(
            base_url,
            api_key,
            timeout=timeout,
            retries=retries,
            backoff=backoff,
            max_backoff=max_backoff,
        )
        self._http = httpx.Client(base_url=base_url, headers=self.headers)

    def _call(self, exchange: wire.Exchange[T]) -> T:
        self._check_open()
        attempt = 0
        while True:
            try:
                response = self._http.request(
                    exchange.method,
                    exchange.path,
                    params=exchange.params,
                    content=exchange.body,
                    timeout=self._timeout(exchange),
                )
                return self._answer(exchange, response, attempt)
            except httpx.TransportError as exc:
                failure = self._unreachable(exc)
            except RequestError as exc:
                failure = exc
            if self._give_up(failure, attempt):
                raise failure
            time.sleep(self.policy.delay(attempt, failure))
            attempt += 1

    def append(
        self,
        thread_id: str,
        messages: Sequence[Any],
        *,
        delta_id: str | None = None,
        metadata: Mapping[str, Any] | None = None,
    ) -> Appended:
        return self._call(wire.append(thread_id, messages, delta_id, metadata))

    def append_many(self, deltas: Iterable[DeltaLike]) -> list[Appended]:
        return self._call(wire.append_many(deltas))

    def state(  # noqa: PLR0913  # the public read's keyword arguments: GET /state's query
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
        return self._call(
            wire.state(
                thread_id,
                format=format,
                min_version=min_version,
                wait=wait,
                limit=limit,
                after=after,
                before=before,
                at_version=at_version,
            )
        )

    def context(  # noqa: PLR0913  # trim_messages' arguments and a read's, as GET /context takes them
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
        return self._call(
            wire.context(
                thread_id,
                max_tokens=max_tokens,
                strategy=strategy,
                include_system=include_system,
                start_on=start_on,
                end_on=end_on,
                counter=counter,
                format=format,
                min_version=min_version,
                wait=wait,
                at_version=at_version,
            )
        )

    def status(self, thread_id: str) -> Status:
        return self._call(wire.status(thread_id))

    def delete(self, thread_id: str) -> None:
        self._call(wire.delete(thread_id))

    def wait_for(self, thread_id: str, version: str, timeout: float) -> str:
        return self._call(wire.wait_for(thread_id, version, timeout))

    def update(
        self,
        thread_id: str,
        *,
        metadata: Mapping[str, Any] | Unset = UNSET,
        ttl_seconds: float | Unset | None = UNSET,
        pinned: bool | Unset = UNSET,
    ) -> Status:
        """Change the thread's metadata (merged; a None value deletes its key), its own
        TTL (None: the deployment's) and its pin, together or not at all; its status."""
        return self._call(wire.update(thread_id, metadata, ttl_seconds, pinned))

    def search(
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
        body = {"metadata": metadata, "status": status, "sort": sort, "limit": limit}
        return self._call(wire.search({**body, "cursor": cursor}))

    def count(
        self, *, metadata: Mapping[str, Any] | None = None, status: str | None = None
    ) -> int:
        """How many threads :meth:`search` would find."""
        return self._call(wire.count({"metadata": metadata, "status": status}))

    def copy(
        self,
        thread_id: str,
        to: str,
        *,
        at_version: str | None = None,
        metadata: Mapping[str, Any] | None = None,
    ) -> Copied:
        """A new thread ``to`` whose state is this one's at ``at_version`` (default: now),
        with its metadata and ``metadata``'s changes; Conflict when ``to`` exists."""
        return self._call(wire.copy(thread_id, to, at_version, metadata))

    def prune(
        self,
        *,
        prefix: str = "",
        metadata: Mapping[str, Any] | None = None,
        idle_seconds: float | None = None,
        dry_run: bool = False,
    ) -> Pruned:
        """Remove this tenant's threads whose id starts with ``prefix``, holding every
        ``metadata`` value, idle ``idle_seconds`` or more; never a pinned one."""
        body = {"prefix": prefix, "metadata": metadata, "idle_seconds": idle_seconds}
        return self._call(wire.prune({**body, "dry_run": dry_run}))

    def subscribe(
        self, thread_id: str, *, after: str | None = None, format: Format = "langchain"
    ) -> Iterator[Event]:
        """The thread's events (``GET /threads/{id}/events``): a snapshot unless resuming
        ``after`` a version, then one change per version; reopened with the last id
        whenever the stream ends (:mod:`threadfold.feed_reader`)."""
        self._check_open()
        reader = feed_reader.Reader(thread_id, after, format, self.shown_url)
        return feed_reader.follow(self._http, reader, self.policy, self.timeout)

    def close(self) -> None:
        self._closed = True
        self._http.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()


class AsyncHttpClient(_Base):
    """The asyncio twin of :class:`HttpClient` (same arguments); one per event loop."""

    def __init__(
        self,
        base_url: str,
        api_key: str | None = None,
        *,
        timeout: float = 10.0,
        retries: int = 3,
        backoff: float = 0.1,
        max_backoff: float = 2.0,
    ) -> None:
        super().__init__(
            base_url,
            api_key,
            timeout=timeout,
            retries=retries,
            backoff=backoff,
            max_backoff=max_backoff,
        )
        self._http = httpx.AsyncClient(base_url=base_url, headers=self.headers)

    async def _call(self, exchange: wire.Exchange[T]) -> T:
        self._check_open()
        attempt = 0
        while True:
            try:
                response = await self._http.request(
                    exchange.method,
                    exchange.path,
                    params=exchange.params,
                    content=exchange.body,
                    timeout=self._timeout(exchange),
                )
                return self._answer(exchange, response, attempt)
            except httpx.TransportError as exc:
                failure = self._unreachable(exc)
            except RequestError as exc:
                failure = exc
            if self._give_up(failure, attempt):
                raise failure
            await asyncio.sleep(self.policy.delay(attempt, failure))
            attempt += 1

    async def append(
        self,
        thread_id: str,
        messages: Sequence[Any],
        *,
        delta_id: str | None = None,
        metadata: Mapping[str, Any] | None = None,
    ) -> Appended:
        return await self._call(wire.append(thread_id, messages, delta_id, metadata))

    async def append_many(self, deltas: Iterable[DeltaLike]) -> list[Appended]:
        return await self._call(wire.append_many(deltas))

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
        return await self._call(
            wire.state(
                thread_id,
                format=format,
                min_version=min_version,
                wait=wait,
                limit=limit,
                after=after,
                before=before,
                at_version=at_version,
            )
        )

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
        return await self._call(
            wire.context(
                thread_id,
                max_tokens=max_tokens,
                strategy=strategy,
                include_system=include_system,
                start_on=start_on,
                end_on=end_on,
                counter=counter,
                format=format,
                min_version=min_version,
                wait=wait,
                at_version=at_version,
            )
        )

    async def status(self, thread_id: str) -> Status:
        return await self._call(wire.status(thread_id))

    async def delete(self, thread_id: str) -> None:
        await self._call(wire.delete(thread_id))

    async def wait_for(self, thread_id: str, version: str, timeout: float) -> str:
        return await self._call(wire.wait_for(thread_id, version, timeout))

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
        return await self._call(wire.update(thread_id, metadata, ttl_seconds, pinned))

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
        body = {"metadata": metadata, "status": status, "sort": sort, "limit": limit}
        return await self._call(wire.search({**body, "cursor": cursor}))

    async def count(
        self, *, metadata: Mapping[str, Any] | None = None, status: str | None = None
    ) -> int:
        """How many threads :meth:`search` would find."""
        return await self._call(wire.count({"metadata": metadata, "status": status}))

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
        return await self._call(wire.copy(thread_id, to, at_version, metadata))

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
        body = {"prefix": prefix, "metadata": metadata, "idle_seconds": idle_seconds}
        return await self._call(wire.prune({**body, "dry_run": dry_run}))

    def subscribe(
        self, thread_id: str, *, after: str | None = None, format: Format = "langchain"
    ) -> AsyncIterator[Event]:
        """The asyncio twin of :meth:`HttpClient.subscribe`."""
        self._check_open()
        reader = feed_reader.Reader(thread_id, after, format, self.shown_url)
        return feed_reader.afollow(self._http, reader, self.policy, self.timeout)

    async def close(self) -> None:
        self._closed = True
        await self._http.aclose()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self,
        kind: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.close()

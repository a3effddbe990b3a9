"""The HTTP clients (``threadfold.AsyncHttpClient``, and ``threadfold.HttpClient``
generated from it): the front over a remote deployment's HTTP API (httpx).

Each operation is sent as :mod:`threadfold.wire` derives its request from the table.
Connections are pooled and kept alive (one client serves many calls; the sync one is
thread-safe); calls that got no answer, or a 502/503/504, are sent again with backoff
(:mod:`threadfold.retry`), appends with the same ``delta_id``, so each is applied once.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from typing import Final, TypeVar, cast

import httpcore
import httpx
import msgspec

from threadfold import feed_reader, wire
from threadfold._async.front import AsyncFront
from threadfold._async.held import HeldBackend
from threadfold.errors import ClientClosed, RequestError, VersionNotReached
from threadfold.feed import Event
from threadfold.retry import TRANSPORT_ERRORS
from threadfold.types import Format
from threadfold.workers.threads import operations as ops

T = TypeVar("T")
#: Connections the pool keeps to the API (httpx's default).
POOL: Final = 100
#: The longest wait one request asks the API to hold: the API refuses a wait past its
#: THREADFOLD_MAX_WAIT_SECONDS (30 by default), so a longer ``wait_for`` is several.
WAIT_SLICE: Final = 25.0


def _header(headers: list[tuple[bytes, bytes]], name: bytes) -> str | None:
    for key, value in headers:
        if key.lower() == name:
            return value.decode("latin-1")
    return None



class AsyncHttpClient(AsyncFront):
    """The HTTP API of a deployment at ``base_url``, with ``api_key`` as its bearer token
    when it has keys. ``timeout`` bounds each attempt (a read's ``wait`` is added to it);
    ``retries``, ``backoff`` and ``max_backoff``: see :class:`threadfold.retry.RetryPolicy`."""

    def __init__(  # the connection's settings, by name
        self,
        base_url: str,
        api_key: str | None = None,
        *,
        timeout: float = 10.0,
        retries: int = 3,
        backoff: float = 0.1,
        max_backoff: float = 2.0,
    ) -> None:
        self.remote = wire.Remote(
            base_url,
            api_key,
            timeout=timeout,
            retries=retries,
            backoff=backoff,
            max_backoff=max_backoff,
        )
        # The event streams keep httpx (httpx-sse reads them); every other call goes
        # through httpcore's pool (threadfold.wire.Remote: half the CPU of a call).
        self._http = httpx.AsyncClient(base_url=base_url, headers=self.remote.headers)
        self._pool = httpcore.AsyncConnectionPool(max_connections=POOL,
                                                  network_backend=HeldBackend())
        self._closed = False

    async def _run(self, op: ops.Op[T]) -> T:
        if self._closed:
            raise ClientClosed("this client is closed")
        if isinstance(op, ops.WaitFor) and op.timeout > WAIT_SLICE:
            return cast(T, await self._wait_sliced(op))
        return await self._call(wire.exchange(op))

    async def _wait_sliced(self, op: ops.WaitFor) -> str:
        """``wait_for`` past what one request may hold: requests of at most
        :data:`WAIT_SLICE` seconds until the version, or the caller's timeout, comes."""
        _, timeout = op.checked()  # a bad version or timeout is refused before any wait
        deadline = time.monotonic() + timeout
        while True:
            left = max(0.0, deadline - time.monotonic())
            piece = msgspec.structs.replace(op, timeout=min(left, WAIT_SLICE))
            try:
                return await self._call(wire.exchange(piece))
            except VersionNotReached:
                if time.monotonic() >= deadline:
                    raise

    async def _call(self, exchange: wire.Exchange[T]) -> T:
        remote = self.remote
        attempt = 0
        while True:
            try:
                response = await self._pool.request(
                    exchange.method,
                    remote.target(exchange),
                    headers=remote.request_headers(exchange),
                    content=exchange.body or b"",
                    extensions={"timeout": remote.timeouts(exchange)},
                )
                retry_after = _header(response.headers, b"retry-after")
                return remote.answer(exchange, response.status, response.content,
                                     retry_after, attempt)
            except TRANSPORT_ERRORS as exc:
                failed = remote.unreachable(exc)
            except RequestError as exc:
                failed = exc
            if remote.give_up(failed, attempt):
                raise failed
            await asyncio.sleep(remote.policy.delay(attempt, failed))
            attempt += 1

    def subscribe(
        self, thread_id: str, *, after: str | None = None, format: Format = "langchain"
    ) -> AsyncIterator[Event]:
        """The thread's events (``GET /threads/{id}/events``): a snapshot unless resuming
        ``after`` a version, then one change per version; reopened with the last id
        whenever the stream ends (:mod:`threadfold.feed_reader`)."""
        if self._closed:
            raise ClientClosed("this client is closed")
        remote = self.remote
        reader = feed_reader.Reader(thread_id, after, format, remote.shown_url)
        return feed_reader.afollow(self._http, reader, remote.policy, remote.timeout)

    async def close(self) -> None:
        self._closed = True
        await self._pool.aclose()
        await self._http.aclose()

    def __repr__(self) -> str:  # never the API key
        return f"<threadfold.{type(self).__name__} {self.remote.shown_url}>"

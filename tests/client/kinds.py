"""The four kinds of client, each opened against the test stack, and an adapter that
drives an asyncio client from the contract tests' synchronous code."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Iterable, Iterator, Mapping, Sequence
from types import TracebackType
from typing import Any, Self, TypeVar

from threadfold import (
    Appended,
    AsyncClient,
    AsyncClientProtocol,
    AsyncHttpClient,
    Client,
    ClientProtocol,
    DeltaLike,
    Event,
    Format,
    HttpClient,
    State,
    Status,
)
from threadfold.types import UNSET, Context, Copied, Pruned, Searched, ThreadList, Unset
from threadfold.workers.settings import Settings
from threadfold.workers.threads.checkpoint_ops import CheckpointOp

R = TypeVar("R")

KINDS = ["Client", "AsyncClient", "HttpClient", "AsyncHttpClient"]
DIRECT = ["Client", "AsyncClient"]
HTTP = ["HttpClient", "AsyncHttpClient"]

#: The API key of the test stack's API (bound to the default tenant, which the direct
#: clients use): HTTP clients given it see the same threads as the direct ones.
TOKEN = "client-tests-key-0123456789"  # noqa: S105  # a test stack's key


def new_thread() -> str:
    """A thread id of the test's own (the stack is shared by the session)."""
    return f"t-{uuid.uuid4().hex[:16]}"


class Synced:
    """An asyncio client called from synchronous code: each call runs to its end on the
    runner's one event loop (the client's connections belong to that loop)."""

    def __init__(self, runner: asyncio.Runner, inner: AsyncClientProtocol) -> None:
        self.runner = runner
        self.inner = inner

    def append(
        self,
        thread_id: str,
        messages: Sequence[Any],
        *,
        delta_id: str | None = None,
        metadata: Mapping[str, Any] | None = None,
    ) -> Appended:
        return self.runner.run(
            self.inner.append(thread_id, messages, delta_id=delta_id, metadata=metadata)
        )

    def append_many(self, deltas: Iterable[DeltaLike]) -> list[Appended]:
        return self.runner.run(self.inner.append_many(deltas))

    def append_stream(self, bulks: Iterable[Iterable[DeltaLike]]) -> Iterator[list[Appended]]:
        stream = self.inner.append_stream(bulks)

        async def step() -> list[Appended]:
            return await stream.__anext__()

        while True:
            try:
                yield self.runner.run(step())
            except StopAsyncIteration:
                return

    def state(
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
        return self.runner.run(
            self.inner.state(
                thread_id,
                min_version=min_version,
                wait=wait,
                format=format,
                limit=limit,
                after=after,
                before=before,
                at_version=at_version,
            )
        )

    def context(self, thread_id: str, max_tokens: int, **trim: Any) -> Context:
        return self.runner.run(self.inner.context(thread_id, max_tokens, **trim))

    def status(self, thread_id: str) -> Status:
        return self.runner.run(self.inner.status(thread_id))

    def delete(self, thread_id: str) -> None:
        self.runner.run(self.inner.delete(thread_id))

    def wait_for(self, thread_id: str, version: str, timeout: float) -> str:
        return self.runner.run(self.inner.wait_for(thread_id, version, timeout))

    def threads(self, *, limit: int = 50) -> ThreadList:
        return self.runner.run(self.inner.threads(limit=limit))

    def update(
        self,
        thread_id: str,
        *,
        metadata: Mapping[str, Any] | Unset = UNSET,
        ttl_seconds: float | Unset | None = UNSET,
        pinned: bool | Unset = UNSET,
    ) -> Status:
        return self.runner.run(
            self.inner.update(thread_id, metadata=metadata, ttl_seconds=ttl_seconds, pinned=pinned)
        )

    def search(
        self,
        *,
        metadata: Mapping[str, Any] | None = None,
        status: str | None = None,
        sort: str = "activity",
        limit: int = 20,
        cursor: str | None = None,
    ) -> Searched:
        return self.runner.run(
            self.inner.search(
                metadata=metadata, status=status, sort=sort, limit=limit, cursor=cursor
            )
        )

    def count(self, *, metadata: Mapping[str, Any] | None = None, status: str | None = None) -> int:
        return self.runner.run(self.inner.count(metadata=metadata, status=status))

    def copy(
        self,
        thread_id: str,
        to: str,
        *,
        at_version: str | None = None,
        metadata: Mapping[str, Any] | None = None,
    ) -> Copied:
        return self.runner.run(
            self.inner.copy(thread_id, to, at_version=at_version, metadata=metadata)
        )

    def prune(
        self,
        *,
        prefix: str = "",
        metadata: Mapping[str, Any] | None = None,
        idle_seconds: float | None = None,
        dry_run: bool = False,
    ) -> Pruned:
        return self.runner.run(
            self.inner.prune(
                prefix=prefix, metadata=metadata, idle_seconds=idle_seconds, dry_run=dry_run
            )
        )

    def subscribe(
        self, thread_id: str, *, after: str | None = None, format: Format = "langchain"
    ) -> Iterator[Event]:
        events = self.inner.subscribe(thread_id, after=after, format=format)
        try:
            while True:
                try:
                    yield self.runner.run(_next(events))
                except StopAsyncIteration:
                    return
        finally:
            self.runner.run(_closed(events))

    def checkpoint(self, op: CheckpointOp[R]) -> R:
        return self.runner.run(self.inner.checkpoint(op))

    def close(self) -> None:
        self.runner.run(self.inner.close())

    def __repr__(self) -> str:
        return repr(self.inner)

    def __enter__(self) -> Self:
        self.runner.run(self.inner.__aenter__())
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.runner.run(self.inner.__aexit__(kind, exc, tb))


def open_client(
    kind: str,
    settings: Settings,
    api_url: str,
    runner: asyncio.Runner,
    *,
    api_key: str | None = TOKEN,
    **options: Any,
) -> ClientProtocol:
    """A client of ``kind``: direct ones on ``settings``, HTTP ones on ``api_url``."""
    if kind == "Client":
        return Client(settings=settings, **options)
    if kind == "AsyncClient":
        return Synced(runner, AsyncClient(settings=settings, **options))
    if kind == "HttpClient":
        return HttpClient(api_url, api_key, **options)
    if kind == "AsyncHttpClient":
        return Synced(runner, AsyncHttpClient(api_url, api_key, **options))
    raise ValueError(f"unknown kind of client {kind!r}")


async def _next(events: Any) -> Event:
    event: Event = await anext(events)
    return event


async def _closed(events: Any) -> None:
    await events.aclose()

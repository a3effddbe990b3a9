"""Clients that record what they appended, for the oracle: the one-at-a-time fold of a
thread's accepted deltas in the order of its log (``tests.workers.harness.Ledger``).

They wrap real clients (the calls go to the real stack); only the appends are noted,
with the ids and version the service answered. A duplicate (a retried ``delta_id``) is
noted apart: it was not appended again.
"""

from __future__ import annotations

import threading
from collections.abc import AsyncIterator, Iterable, Iterator, Mapping, Sequence
from types import TracebackType
from typing import Any, Self, TypeVar

from threadfold import (
    Appended,
    AsyncClientProtocol,
    ClientProtocol,
    DeltaLike,
    Event,
    Format,
    State,
    Status,
)
from threadfold.core import dump_messages
from threadfold.testing import Ledger
from threadfold.types import UNSET, Context, Copied, Pruned, Searched, ThreadList, Unset
from threadfold.workers.threads.checkpoint_ops import CheckpointOp


class Recorder:
    """The appends of any number of clients, from any number of threads."""

    def __init__(self) -> None:
        self.sent = Ledger()
        self.delta_ids: list[str | None] = []
        self.duplicates: list[Appended] = []
        self._lock = threading.Lock()

    def note(self, messages: Sequence[Any], delta_id: str | None, done: Appended) -> None:
        with self._lock:
            if done.duplicate:
                self.duplicates.append(done)
                return
            self.delta_ids.append(delta_id)
            self.sent.add(done.thread_id, done.version, list(messages), done.ids)

    def expected(self, thread_id: str) -> list[dict[str, Any]]:
        """The thread as the one-at-a-time fold of what was appended to it, dumped."""
        with self._lock:
            return dump_messages(self.sent.expected(thread_id))

    def last_version(self, thread_id: str) -> str:
        with self._lock:
            last = self.sent.last_version(thread_id)
        assert last is not None, f"nothing appended to {thread_id}"
        return last


R = TypeVar("R")


class Recording:
    """A sync client whose appends are noted by ``recorder``."""

    def __init__(self, inner: ClientProtocol, recorder: Recorder) -> None:
        self.inner = inner
        self.recorder = recorder

    def append(
        self,
        thread_id: str,
        messages: Sequence[Any],
        *,
        delta_id: str | None = None,
        metadata: Mapping[str, Any] | None = None,
    ) -> Appended:
        done = self.inner.append(thread_id, messages, delta_id=delta_id, metadata=metadata)
        self.recorder.note(messages, delta_id, done)
        return done

    def append_many(self, deltas: Iterable[DeltaLike]) -> list[Appended]:
        raise NotImplementedError("not recorded: the integrations append one delta a call")

    def append_stream(self, bulks: Iterable[Iterable[DeltaLike]]) -> Iterator[list[Appended]]:
        raise NotImplementedError("not recorded: the integrations append one delta a call")

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
        return self.inner.state(
            thread_id,
            min_version=min_version,
            wait=wait,
            format=format,
            limit=limit,
            after=after,
            before=before,
            at_version=at_version,
        )

    def context(self, thread_id: str, max_tokens: int, **trim: Any) -> Context:
        return self.inner.context(thread_id, max_tokens, **trim)

    def status(self, thread_id: str) -> Status:
        return self.inner.status(thread_id)

    def delete(self, thread_id: str) -> None:
        self.inner.delete(thread_id)

    def wait_for(self, thread_id: str, version: str, timeout: float) -> str:
        return self.inner.wait_for(thread_id, version, timeout)

    def threads(self, *, limit: int = 50) -> ThreadList:
        return self.inner.threads(limit=limit)

    def update(
        self,
        thread_id: str,
        *,
        metadata: Mapping[str, Any] | Unset = UNSET,
        ttl_seconds: float | Unset | None = UNSET,
        pinned: bool | Unset = UNSET,
    ) -> Status:
        return self.inner.update(
            thread_id, metadata=metadata, ttl_seconds=ttl_seconds, pinned=pinned
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
        return self.inner.search(
            metadata=metadata, status=status, sort=sort, limit=limit, cursor=cursor
        )

    def count(self, *, metadata: Mapping[str, Any] | None = None, status: str | None = None) -> int:
        return self.inner.count(metadata=metadata, status=status)

    def copy(
        self,
        thread_id: str,
        to: str,
        *,
        at_version: str | None = None,
        metadata: Mapping[str, Any] | None = None,
    ) -> Copied:
        return self.inner.copy(thread_id, to, at_version=at_version, metadata=metadata)

    def prune(
        self,
        *,
        prefix: str = "",
        metadata: Mapping[str, Any] | None = None,
        idle_seconds: float | None = None,
        dry_run: bool = False,
    ) -> Pruned:
        return self.inner.prune(
            prefix=prefix, metadata=metadata, idle_seconds=idle_seconds, dry_run=dry_run
        )

    def subscribe(
        self, thread_id: str, *, after: str | None = None, format: Format = "langchain"
    ) -> Iterator[Event]:
        return self.inner.subscribe(thread_id, after=after, format=format)

    def checkpoint(self, op: CheckpointOp[R]) -> R:
        return self.inner.checkpoint(op)

    def close(self) -> None:
        self.inner.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"<Recording {self.inner!r}>"


class AsyncRecording:
    """An asyncio client whose appends are noted by ``recorder``."""

    def __init__(self, inner: AsyncClientProtocol, recorder: Recorder) -> None:
        self.inner = inner
        self.recorder = recorder

    async def append(
        self,
        thread_id: str,
        messages: Sequence[Any],
        *,
        delta_id: str | None = None,
        metadata: Mapping[str, Any] | None = None,
    ) -> Appended:
        done = await self.inner.append(thread_id, messages, delta_id=delta_id, metadata=metadata)
        self.recorder.note(messages, delta_id, done)
        return done

    async def append_many(self, deltas: Iterable[DeltaLike]) -> list[Appended]:
        raise NotImplementedError("not recorded: the integrations append one delta a call")

    def append_stream(
        self, bulks: Iterable[Iterable[DeltaLike]]
    ) -> AsyncIterator[list[Appended]]:
        raise NotImplementedError("not recorded: the integrations append one delta a call")

    async def state(
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
        return await self.inner.state(
            thread_id,
            min_version=min_version,
            wait=wait,
            format=format,
            limit=limit,
            after=after,
            before=before,
            at_version=at_version,
        )

    async def context(self, thread_id: str, max_tokens: int, **trim: Any) -> Context:
        return await self.inner.context(thread_id, max_tokens, **trim)

    async def status(self, thread_id: str) -> Status:
        return await self.inner.status(thread_id)

    async def delete(self, thread_id: str) -> None:
        await self.inner.delete(thread_id)

    async def wait_for(self, thread_id: str, version: str, timeout: float) -> str:
        return await self.inner.wait_for(thread_id, version, timeout)

    async def threads(self, *, limit: int = 50) -> ThreadList:
        return await self.inner.threads(limit=limit)

    async def update(
        self,
        thread_id: str,
        *,
        metadata: Mapping[str, Any] | Unset = UNSET,
        ttl_seconds: float | Unset | None = UNSET,
        pinned: bool | Unset = UNSET,
    ) -> Status:
        return await self.inner.update(
            thread_id, metadata=metadata, ttl_seconds=ttl_seconds, pinned=pinned
        )

    async def search(
        self,
        *,
        metadata: Mapping[str, Any] | None = None,
        status: str | None = None,
        sort: str = "activity",
        limit: int = 20,
        cursor: str | None = None,
    ) -> Searched:
        return await self.inner.search(
            metadata=metadata, status=status, sort=sort, limit=limit, cursor=cursor
        )

    async def count(
        self, *, metadata: Mapping[str, Any] | None = None, status: str | None = None
    ) -> int:
        return await self.inner.count(metadata=metadata, status=status)

    async def copy(
        self,
        thread_id: str,
        to: str,
        *,
        at_version: str | None = None,
        metadata: Mapping[str, Any] | None = None,
    ) -> Copied:
        return await self.inner.copy(thread_id, to, at_version=at_version, metadata=metadata)

    async def prune(
        self,
        *,
        prefix: str = "",
        metadata: Mapping[str, Any] | None = None,
        idle_seconds: float | None = None,
        dry_run: bool = False,
    ) -> Pruned:
        return await self.inner.prune(
            prefix=prefix, metadata=metadata, idle_seconds=idle_seconds, dry_run=dry_run
        )

    def subscribe(
        self, thread_id: str, *, after: str | None = None, format: Format = "langchain"
    ) -> AsyncIterator[Event]:
        return self.inner.subscribe(thread_id, after=after, format=format)

    async def checkpoint(self, op: CheckpointOp[R]) -> R:
        return await self.inner.checkpoint(op)

    async def close(self) -> None:
        await self.inner.close()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self,
        kind: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.close()

    def __repr__(self) -> str:
        return f"<AsyncRecording {self.inner!r}>"

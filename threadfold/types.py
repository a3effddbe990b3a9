"""What the clients return, and the one interface every kind of client has.

The results are the thread service's (:mod:`threadfold.core.results`), which
the API encodes as its response bodies, field for field: an HTTP client decodes them
straight back into these types, a direct client returns them as the service built them.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterable, Iterator, Mapping, Sequence
from types import TracebackType
from typing import TYPE_CHECKING, Any, Protocol, Self, TypeAlias

import msgspec

from threadfold.core.context import Counter, Strategy
from threadfold.core.results import (
    Appended,
    Context,
    Copied,
    Format,
    Pruned,
    Searched,
    Skipped,
    State,
    Status,
    ThreadList,
    ThreadRow,
    Unservable,
)

if TYPE_CHECKING:
    from threadfold.feed import Event

__all__ = [
    "UNSET",
    "Appended",
    "Context",
    "Copied",
    "Counter",
    "Strategy",
    "Pruned",
    "Searched",
    "AsyncClientProtocol",
    "ClientProtocol",
    "DeltaLike",
    "Format",
    "HasDelta",
    "Skipped",
    "State",
    "Status",
    "ThreadList",
    "ThreadRow",
    "Unservable",
]

#: What an ``update`` argument left out is: unchanged (``None`` means "the default").
UNSET = msgspec.UNSET
Unset: TypeAlias = msgspec.UnsetType


class HasDelta(Protocol):
    """A delta given as an object (``threadfold.workers.ingest.producer.Delta``, a dataclass of
    yours); an
    attribute ``delta_id`` is used when present."""

    @property
    def thread_id(self) -> str: ...

    @property
    def messages(self) -> Sequence[Any]: ...


#: One delta of ``append_many``: ``(thread_id, messages)``, ``(thread_id, messages,
#: delta_id)``, a mapping with those keys, or an object with those attributes.
DeltaLike: TypeAlias = (
    tuple[str, Sequence[Any]] | tuple[str, Sequence[Any], str | None] | Mapping[str, Any] | HasDelta
)


class ClientProtocol(Protocol):
    """What :class:`threadfold.Client` and :class:`threadfold.HttpClient` both offer."""

    def append(
        self,
        thread_id: str,
        messages: Sequence[Any],
        *,
        delta_id: str | None = None,
        metadata: Mapping[str, Any] | None = None,
    ) -> Appended: ...

    def append_many(self, deltas: Iterable[DeltaLike]) -> list[Appended]: ...

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
    ) -> State: ...

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
    ) -> Context: ...

    def status(self, thread_id: str) -> Status: ...

    def delete(self, thread_id: str) -> None: ...

    def wait_for(self, thread_id: str, version: str, timeout: float) -> str: ...

    def threads(self, *, limit: int = 50) -> ThreadList: ...

    def update(
        self,
        thread_id: str,
        *,
        metadata: Mapping[str, Any] | Unset = UNSET,
        ttl_seconds: float | Unset | None = UNSET,
        pinned: bool | Unset = UNSET,
    ) -> Status: ...

    def search(
        self,
        *,
        metadata: Mapping[str, Any] | None = None,
        status: str | None = None,
        sort: str = "activity",
        limit: int = 20,
        cursor: str | None = None,
    ) -> Searched: ...

    def count(
        self, *, metadata: Mapping[str, Any] | None = None, status: str | None = None
    ) -> int: ...

    def copy(
        self,
        thread_id: str,
        to: str,
        *,
        at_version: str | None = None,
        metadata: Mapping[str, Any] | None = None,
    ) -> Copied: ...

    def prune(
        self,
        *,
        prefix: str = "",
        metadata: Mapping[str, Any] | None = None,
        idle_seconds: float | None = None,
        dry_run: bool = False,
    ) -> Pruned: ...

    def subscribe(
        self, thread_id: str, *, after: str | None = None, format: Format = "langchain"
    ) -> Iterator[Event]: ...

    def close(self) -> None: ...

    def __enter__(self) -> Self: ...

    def __exit__(
        self,
        kind: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None: ...


class AsyncClientProtocol(Protocol):
    """What :class:`threadfold.AsyncClient` and :class:`threadfold.AsyncHttpClient` offer."""

    async def append(
        self,
        thread_id: str,
        messages: Sequence[Any],
        *,
        delta_id: str | None = None,
        metadata: Mapping[str, Any] | None = None,
    ) -> Appended: ...

    async def append_many(self, deltas: Iterable[DeltaLike]) -> list[Appended]: ...

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
    ) -> State: ...

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
    ) -> Context: ...

    async def status(self, thread_id: str) -> Status: ...

    async def delete(self, thread_id: str) -> None: ...

    async def wait_for(self, thread_id: str, version: str, timeout: float) -> str: ...

    async def threads(self, *, limit: int = 50) -> ThreadList: ...

    async def update(
        self,
        thread_id: str,
        *,
        metadata: Mapping[str, Any] | Unset = UNSET,
        ttl_seconds: float | Unset | None = UNSET,
        pinned: bool | Unset = UNSET,
    ) -> Status: ...

    async def search(
        self,
        *,
        metadata: Mapping[str, Any] | None = None,
        status: str | None = None,
        sort: str = "activity",
        limit: int = 20,
        cursor: str | None = None,
    ) -> Searched: ...

    async def count(
        self, *, metadata: Mapping[str, Any] | None = None, status: str | None = None
    ) -> int: ...

    async def copy(
        self,
        thread_id: str,
        to: str,
        *,
        at_version: str | None = None,
        metadata: Mapping[str, Any] | None = None,
    ) -> Copied: ...

    async def prune(
        self,
        *,
        prefix: str = "",
        metadata: Mapping[str, Any] | None = None,
        idle_seconds: float | None = None,
        dry_run: bool = False,
    ) -> Pruned: ...

    def subscribe(
        self, thread_id: str, *, after: str | None = None, format: Format = "langchain"
    ) -> AsyncIterator[Event]: ...

    async def close(self) -> None: ...

    async def __aenter__(self) -> Self: ...

    async def __aexit__(
        self,
        kind: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None: ...

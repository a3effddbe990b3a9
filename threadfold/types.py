"""What the clients return, and the one interface every kind of client has.

The results are the API's response bodies, field for field (``POST .../deltas``,
``GET .../state``, ``GET .../status``): an HTTP client decodes them straight into these
types, a direct client builds them from the store's answers.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterable, Iterator, Mapping, Sequence
from types import TracebackType
from typing import TYPE_CHECKING, Any, Literal, Protocol, Self, TypeAlias

import msgspec

if TYPE_CHECKING:  # threadfold.live builds on the types here
    from threadfold.live import Event

Format: TypeAlias = Literal["langchain", "openai"]


class Appended(msgspec.Struct, frozen=True):
    """One appended delta: its ``version`` (``<ms>-<seq>``, the thread's version once it
    is applied), the ``ids`` of its messages as stored (stamped on the id-less ones), and
    whether its ``delta_id`` had been seen before (``duplicate``: this is the first
    attempt's answer, and nothing was appended again)."""

    thread_id: str
    version: str
    accepted: int
    duplicate: bool
    ids: tuple[str, ...]


class Unservable(msgspec.Struct, frozen=True):
    """A stored message a page serves as a marker in its place: it cannot be served in
    the format asked (stored before ingestion refused such messages, or written into
    Redis by hand). ``index`` (``field``, ``pointer``) is where the marker stands in
    ``State.messages``, ``id`` the message's id (replace or remove it by id), ``message``
    says why; ``code`` is ``"unservable"``."""

    code: str
    message: str
    field: str
    pointer: str
    index: int
    id: str | None


class State(msgspec.Struct, frozen=True):
    """A page of a thread's merged messages (plain dicts: LangChain's ``model_dump()``
    form, or OpenAI's chat form) and the ``version`` they reflect; ``has_more`` when the
    ``limit`` cut the page short, ``total`` messages in the whole thread; ``unservable``
    names the markers served in place of messages the format cannot carry (none on
    almost every page)."""

    thread_id: str
    version: str
    total: int
    has_more: bool
    format: Format
    messages: list[dict[str, Any]]
    unservable: tuple[Unservable, ...] = ()


class Skipped(msgspec.Struct, frozen=True):
    """A log entry an operator skipped (``threadfold retry --skip``): why its drain
    failed, and when (ms since the epoch)."""

    entry: str
    reason: str
    at_ms: int


class Status(msgspec.Struct, frozen=True):
    """A thread's progress: ``version`` applied, ``last_enqueued``, the ``backlog`` of
    entries not yet applied, its quarantine if a poison entry stopped it, and the
    entries an operator skipped (the latest, oldest first)."""

    thread_id: str
    version: str
    last_enqueued: str
    backlog: int
    messages: int
    last_commit_ms: int | None
    attempts: int
    quarantined: bool
    quarantine_reason: str | None
    quarantined_entry: str | None
    dirty_since_ms: int | None
    skipped: tuple[Skipped, ...] = ()


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
        self, thread_id: str, messages: Sequence[Any], *, delta_id: str | None = None
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

    def status(self, thread_id: str) -> Status: ...

    def delete(self, thread_id: str) -> None: ...

    def wait_for(self, thread_id: str, version: str, timeout: float) -> str: ...

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
        self, thread_id: str, messages: Sequence[Any], *, delta_id: str | None = None
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

    async def status(self, thread_id: str) -> Status: ...

    async def delete(self, thread_id: str) -> None: ...

    async def wait_for(self, thread_id: str, version: str, timeout: float) -> str: ...

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

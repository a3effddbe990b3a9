"""``threadfold.Client``: the synchronous direct client (Redis and the broker, no HTTP).

For backends that run beside the pipeline: appends go straight into the threads' logs,
reads straight to the state in Redis. One client is meant to be shared by a process's
threads (a request handler's, an agent loop's): it is thread-safe, and the wake-ups of
its calls are gathered and published together from a background thread, so one call
per delta costs a few Celery tasks a window instead of one task per call.

Every method is the thread service's (:class:`threadfold.workers.threads.service.Threads`)
in this client's tenant: what the HTTP API answers for the same call, result and error.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
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
from threadfold.workers.wiring import Waker, open_threads, settings_for


class Client:
    """Appends and reads threads directly in Redis, waking workers through the broker.

    ``Client()`` reads the ``THREADFOLD_*`` settings; ``redis_url`` and ``broker_url``
    override theirs, ``settings`` replaces them. ``tenant`` is the keyspace the threads
    live in (an API key bound to a tenant sees the same threads). ``waker`` publishes
    the wake-ups (by default Celery tasks on the settings' queue); the calls of every
    ``wake_window`` seconds share one publish, from a background thread.
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
        self._engine = open_threads(
            resolved, waker=waker, wake_window=query.timeout(wake_window, "wake_window")
        )
        self.settings = resolved
        self._threads = self._engine.threads
        self._closed = False

    def append(
        self,
        thread_id: str,
        messages: Sequence[Any],
        *,
        delta_id: str | None = None,
        metadata: Mapping[str, Any] | None = None,
    ) -> Appended:
        """Append one delta (message-likes, or LangChain messages) to a thread."""
        self._check_open()
        return self._threads.append(self.tenant, thread_id, messages, delta_id, metadata)

    def append_many(self, deltas: Iterable[DeltaLike]) -> list[Appended]:
        """Append many deltas, of many threads, in one round trip; all are checked
        before any is appended."""
        self._check_open()
        return self._threads.append_many(self.tenant, args.deltas(deltas))

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
        """A page of the thread's merged messages (see docs/clients.md)."""
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
        return self._threads.state(self.tenant, thread_id, asked)

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
        return self._threads.context(self.tenant, thread_id, asked)

    def status(self, thread_id: str) -> Status:
        self._check_open()
        return self._threads.status(self.tenant, thread_id)

    def delete(self, thread_id: str) -> None:
        """Delete the thread and its log; NotFound when there is none."""
        self._check_open()
        self._threads.delete(self.tenant, thread_id)

    def wait_for(self, thread_id: str, version: str, timeout: float) -> str:
        """The thread's version once it reached ``version``; VersionNotReached (a
        TimeoutError) after ``timeout`` seconds."""
        self._check_open()
        return self._threads.wait_for(self.tenant, thread_id, version, timeout)

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
        self._check_open()
        change = lifecycle.update(metadata, ttl_seconds, pinned)
        return self._threads.update(self.tenant, thread_id, change)

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
        self._check_open()
        asked = lifecycle.searched(
            metadata=metadata, status=status, sort=sort, limit=limit, cursor=cursor
        )
        return self._threads.search(self.tenant, asked)

    def count(
        self, *, metadata: Mapping[str, Any] | None = None, status: str | None = None
    ) -> int:
        """How many threads :meth:`search` would find."""
        self._check_open()
        asked = lifecycle.searched(metadata=metadata, status=status)
        return (self._threads.count(self.tenant, asked)).count

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
        self._check_open()
        source = query.thread_id(thread_id)
        plan = lifecycle.copy_of(
            self.tenant, source, to, at_version=at_version, metadata=metadata
        )
        return self._threads.copy(self.tenant, source, plan)

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
        self._check_open()
        asked = lifecycle.pruned(
            tenant=self.tenant,
            prefix=prefix,
            metadata=metadata,
            idle_seconds=idle_seconds,
            dry_run=dry_run,
        )
        return self._threads.prune(asked)

    def subscribe(
        self, thread_id: str, *, after: str | None = None, format: Format = "langchain"
    ) -> Iterator[Event]:
        """The thread's events, for as long as the caller iterates: a snapshot (unless
        resuming ``after`` a version it holds), then one change per version; see
        :mod:`threadfold.feed`. Reconnects by itself; ``close()`` the iterator (or leave
        the loop) to stop."""
        self._check_open()
        yield from self._threads.subscribe(self.tenant, thread_id, after=after, format=format)

    def close(self) -> None:
        """Publish the pending wake-ups, then close the connections."""
        if self._closed:
            return
        self._closed = True
        self._engine.close()

    def _check_open(self) -> None:
        if self._closed:
            raise ClientClosed("this client is closed")

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def __repr__(self) -> str:  # no URL: they may carry passwords
        return f"<threadfold.Client tenant={self.tenant!r} queue={self.settings.queue!r}>"


def _listed(types: str | Sequence[str] | None) -> str | list[str] | None:
    """Message types as the query takes them (a single one, or a list)."""
    return types if types is None or isinstance(types, str) else list(types)

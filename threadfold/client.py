"""``threadfold.Client``: the synchronous direct client (Redis and the broker, no HTTP).

For backends that run beside the pipeline: appends go straight into the threads' logs,
reads straight to the state in Redis. One client is meant to be shared by a process's
threads (a request handler's, an agent loop's): it is thread-safe, and the wake-ups of
its calls are gathered and published together from a background thread, so one call
per delta costs a few Celery tasks a window instead of one task per call.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from types import TracebackType
from typing import Any, Self

from threadfold import args, direct, subscription
from threadfold.core.keys import DEFAULT_TENANT, make_ref
from threadfold.errors import ClientClosed
from threadfold.live import Event
from threadfold.types import Appended, DeltaLike, Format, State, Status
from threadfold.workers import entry
from threadfold.workers.ingest.producer import Delta
from threadfold.workers.ingest.wakeup import BackgroundWaker, Waker
from threadfold.workers.settings import Settings
from threadfold.workers.threads import reads


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
        wired = direct.wiring(
            redis_url,
            broker_url,
            settings=settings,
            tenant=tenant,
            waker=waker,
            wake_window=wake_window,
        )
        self.settings, self.tenant, self._celery = wired.settings, wired.tenant, wired.celery
        self._waker = BackgroundWaker(wired.waker, window=wired.window)
        # No automatic reconnect-and-retry: a retried append after a lost reply would be
        # appended twice. A failure raises Unavailable; retry with the same delta_id.
        self._redis = entry.redis(self.settings, retries=0, name=direct.CONNECTION_NAME)
        self._producer = entry.producer(self.settings, self._redis, self._waker)
        self._store = entry.store(self.settings, self._redis)
        self._closed = False

    def append(
        self, thread_id: str, messages: Sequence[Any], *, delta_id: str | None = None
    ) -> Appended:
        """Append one delta (message-likes, or LangChain messages) to a thread."""
        self._check_open()
        delta = Delta(args.thread_id(thread_id), messages, delta_id, self.tenant)
        with direct.translated():
            [result] = self._producer.enqueue_many([delta], path="")
        return direct.appended(result)

    def append_many(self, deltas: Iterable[DeltaLike]) -> list[Appended]:
        """Append many deltas, of many threads, in one round trip; all are checked
        before any is appended."""
        self._check_open()
        batch = [Delta(*d, self.tenant) for d in args.deltas(deltas)]
        with direct.translated():
            results = self._producer.enqueue_many(batch, path="deltas")
        return [direct.appended(r) for r in results]

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
            answer = reads.read(
                self._store,
                make_ref(self.tenant, name),
                name,
                query,
                merge_chunks=self.settings.merge_chunks,
            )
        return direct.state(name, answer)

    def status(self, thread_id: str) -> Status:
        self._check_open()
        name = args.thread_id(thread_id)
        with direct.translated():
            found = self._store.status(make_ref(self.tenant, name))
        return direct.status(name, found)

    def delete(self, thread_id: str) -> None:
        """Delete the thread and its log; NotFound when there is none."""
        self._check_open()
        name = args.thread_id(thread_id)
        with direct.translated():
            deleted = self._store.delete(make_ref(self.tenant, name))
        if not deleted:
            raise direct.not_found(name)

    def wait_for(self, thread_id: str, version: str, timeout: float) -> str:
        """The thread's version once it reached ``version``; VersionNotReached (a
        TimeoutError) after ``timeout`` seconds."""
        self._check_open()
        name = args.thread_id(thread_id)
        wanted, seconds = args.version(version), args.timeout(timeout)
        with direct.translated():
            return reads.wait_for(self._store, make_ref(self.tenant, name), name, wanted, seconds)

    def subscribe(
        self, thread_id: str, *, after: str | None = None, format: Format = "langchain"
    ) -> Iterator[Event]:
        """The thread's events, for as long as the caller iterates: a snapshot (unless
        resuming ``after`` a version it holds), then one change per version; see
        :mod:`threadfold.live`. Reconnects by itself; ``close()`` the iterator (or leave
        the loop) to stop."""
        self._check_open()
        name = args.thread_id(thread_id)
        resume = args.version(after, "after") if after is not None else None
        fmt = args.format_of(format)
        ref = make_ref(self.tenant, name)
        listener = entry.listener(self.settings, name=direct.CONNECTION_NAME)
        steps = subscription.Steps(name, ref, self.settings.keyspace.thread(ref).feed, fmt)
        try:
            yield from subscription.follow(self._store, listener, steps, resume)
        finally:
            listener.close()

    def close(self) -> None:
        """Publish the pending wake-ups, then close the connections."""
        if self._closed:
            return
        self._closed = True
        try:
            self._waker.close()
        finally:
            self._redis.close()
            if self._celery is not None:
                self._celery.close()

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

"""The thread service: every operation a thread has, and the following of its feed.

The operations are written once (:class:`~threadfold.workers.threads._async.service.AsyncService`,
its sync form generated); a subscription is where the two forms genuinely differ: the
asyncio one shares one Pub/Sub connection among all of a process's followers (a hub),
the sync one holds a listener connection of its own. The HTTP API is parsing and
encoding around :class:`AsyncThreads`; the direct clients run their operations on
:class:`Threads` and :class:`AsyncThreads`.

A new thread operation is a class of the table (:mod:`.operations`) and a method of
``_async/service.py`` (then ``python -m tests.unasync``).
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import AsyncGenerator, Generator, Iterable, Iterator, Sequence

from threadfold.core.errors import ClientClosed, InvalidInput, TooManySubscribers, Unavailable
from threadfold.core.render import Format
from threadfold.core.results import Appended, Delta
from threadfold.workers.feed import connect, subscription
from threadfold.workers.feed.bodies import Bodies
from threadfold.workers.feed.events import Event
from threadfold.workers.feed.hub import Hub, HubClosed, HubFull
from threadfold.workers.feed.subscriber import Subscriber
from threadfold.workers.ingest.producer import AsyncProducer
from threadfold.workers.settings import Settings
from threadfold.workers.storage import follow
from threadfold.workers.storage.astore import AsyncStore
from threadfold.workers.storage.read_state import StateBodies
from threadfold.workers.threads import query
from threadfold.workers.threads._async.service import AsyncService
from threadfold.workers.threads._sync.service import Service
from threadfold.workers.threads.query import NO_LIMITS, Limits
from threadfold.workers.threads.steps import UNREACHABLE, Target, refusals, target


def followed(
    tenant: str, thread_id: str, after: str | None, format: object
) -> tuple[Target, str | None, Format]:
    """A subscription's checked arguments: the thread, the version to resume after (a
    version the follower holds), the format it is sent in."""
    at = target(tenant, thread_id)  # the id first, as every operation checks it
    resume = None if after is None else query.version(after, "after")
    return at, resume, query.format_of(format)


class Threads(Service):
    """The thread service, synchronous: one per process (or per direct client)."""

    def append_stream(
        self, tenant: str, bulks: Iterable[Sequence[Delta]]
    ) -> Generator[list[Appended], None]:
        """:meth:`Service.append_stream` with one bulk in flight: bulk k+1 is checked
        and encoded while Redis appends bulk k, over one connection, so each thread's
        deltas stay in order (:meth:`Producer.enqueue_stream`; a stream's deltas are the
        workers' to fold). The tenant's share is taken per bulk, once it is checked."""

        def checked() -> Iterator[Sequence[Delta]]:
            for k, bulk in enumerate(bulks):
                try:
                    self.checks.bulk(bulk)
                except InvalidInput as exc:
                    raise exc.under(f"bulks[{k}].") from None
                yield bulk

        def admit(deltas: int) -> None:
            admission = self.checks.admission(tenant, deltas)
            if admission is not None:
                admission()

        with refusals:
            yield from self.producer.enqueue_stream(checked(), tenant=tenant, admit=admit)

    def subscribe(
        self, tenant: str, thread_id: str, *, after: str | None, format: object
    ) -> Generator[Event, None, None]:
        """The thread's events while the caller iterates, on a listener connection of
        its own (:func:`threadfold.workers.feed.subscription.follow`). Its arguments are
        checked when iteration starts, as an asyncio subscription's are."""
        at, resume, fmt = followed(tenant, thread_id, after, format)
        listener = connect.listener(self.settings, name=self.name)
        feed = self.settings.keyspace.thread(at.ref).feed
        steps = subscription.Steps(at.thread_id, at.ref, feed, fmt)
        try:
            window = follow.window_ms(self.settings.feed_limits.max_age_ms)
            yield from subscription.follow(self.store, listener, steps, resume, window)
        finally:
            listener.close()



class AsyncThreads(AsyncService):
    """The thread service, asyncio: the HTTP API's, and each ``AsyncClient``'s."""

    def __init__(  # the service's parts, by name, as the callers build them
        self,
        settings: Settings,
        producer: AsyncProducer,
        store: AsyncStore,
        *,
        limits: Limits = NO_LIMITS,
        name: str = "threadfold",
        queue_events: int | None = None,
    ) -> None:
        super().__init__(settings, producer, store, limits=limits, name=name)
        #: Events a subscription may leave unread before the hub ends it (it is then
        #: resumed from the feed); by default a direct subscription's, read when the hub
        #: is made.
        self.queue_events = queue_events
        self._hub: Hub | None = None  # made by the first subscribe()

    def hub(self, *, max_subscribers: int) -> Hub:
        """The one follower of thread feeds that all of this service's subscriptions
        share (one Pub/Sub connection), made on first use."""
        if self._hub is None:
            self._hub = connect.ahub(
                self.settings,
                self.store,
                name=self.name,
                queue_events=(
                    subscription.QUEUE_EVENTS if self.queue_events is None else self.queue_events
                ),
                max_subscribers=max_subscribers,
            )
        return self._hub

    def subscriber(self, at: Target, after: str | None) -> Subscriber:
        """A follower of ``at`` on this service's hub (the API's event streams), or the
        refusal: at the hub's cap, or while the process shuts down (503 both)."""
        hub = self.hub(max_subscribers=sys.maxsize)
        try:
            return hub.subscribe(at.ref, after)
        except HubFull as exc:
            raise TooManySubscribers(
                f"this API process serves its cap of {hub.max_subscribers} subscribers; "
                "retry after Retry-After (or on another process)"
            ) from exc
        except HubClosed as exc:
            raise Unavailable("the server is shutting down; retry (on another process)") from exc

    async def subscribe(
        self, tenant: str, thread_id: str, *, after: str | None, format: object
    ) -> AsyncGenerator[Event, None]:
        """The thread's events while the caller iterates, through this service's hub
        (:func:`threadfold.workers.feed.subscription.ahub_follow`); ClientClosed once the
        service is closed."""
        at, resume, fmt = followed(tenant, thread_id, after, format)
        hub = self.hub(max_subscribers=sys.maxsize)
        events = subscription.ahub_follow(hub, at.ref, Bodies(at.thread_id, fmt), resume)
        try:
            # aclosing: leaving the caller's loop ends the subscription now, not when the
            # collector finalizes the inner generator.
            async with contextlib.aclosing(events):
                async for event in events:
                    yield event
        except HubClosed:
            raise ClientClosed("this client is closed") from None

    async def close(self) -> None:
        """End the subscriptions (their hub closes its connection)."""
        if self._hub is not None:
            await self._hub.close()


__all__ = [
    "UNREACHABLE",
    "AsyncThreads",
    "StateBodies",
    "Target",
    "Threads",
    "refusals",
]

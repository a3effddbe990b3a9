"""The thread service: every operation a thread has, defined once, sync and asyncio.

append, append many, state (live, waiting for a version, at a version, paged, in either
format), status, delete, the threads list, wait for a version, subscribe. The HTTP API
is parsing and encoding around :class:`AsyncThreads`; ``threadfold.Client`` and
``AsyncClient`` are thin shells around :class:`Threads` and :class:`AsyncThreads`. The
two classes differ only in I/O: the checks before it (:mod:`.query`), the rules around
it (:mod:`.reads`), the results (:mod:`.results`) and the refusals (:mod:`.errors`) are
each written once, here or in those modules.

A new thread operation is a method on both classes here, built from those pieces, and
a route in ``threadfold.api.app``; the clients' methods call it by name.
"""

from __future__ import annotations

import asyncio
import contextlib
import sys
import time
from collections.abc import AsyncGenerator, Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

import redis

from threadfold.core import REMOVE_ALL_MESSAGES
from threadfold.core.context import Window
from threadfold.core.errors import (
    ClientClosed,
    Conflict,
    InvalidInput,
    InvalidMessage,
    RedisFull,
    TooManySubscribers,
    Unavailable,
    never_written,
)
from threadfold.core.keys import make_ref
from threadfold.core.metadata import decoded
from threadfold.core.metadata import pairs as md_pairs
from threadfold.workers import entry
from threadfold.workers.feed import subscription
from threadfold.workers.feed.bodies import Bodies
from threadfold.workers.feed.events import Event
from threadfold.workers.feed.hub import Hub, HubClosed, HubFull
from threadfold.workers.feed.subscriber import Subscriber
from threadfold.workers.ingest.prepare import Delta
from threadfold.workers.ingest.producer import AsyncProducer, Enqueued, Producer
from threadfold.workers.replay.prefix import NotReplayable
from threadfold.workers.replay.replay import atravel, travel
from threadfold.workers.settings import Settings
from threadfold.workers.storage.astore import AsyncStore
from threadfold.workers.storage.context import ContextRead
from threadfold.workers.storage.patch import Refused
from threadfold.workers.storage.read_state import StateBodies, StatePage
from threadfold.workers.storage.status import ThreadStatus
from threadfold.workers.storage.store import Store
from threadfold.workers.threads import lifecycle, query, reads
from threadfold.workers.threads.admission import TenantBudget
from threadfold.workers.threads.lifecycle import Copy, Prune, Search, Update
from threadfold.workers.threads.listing import (
    Row,
    acount_threads,
    aprune_threads,
    asearch_threads,
    count_threads,
    prune_threads,
    recent_threads,
    search_threads,
    threads_of,
)
from threadfold.workers.threads.query import NO_LIMITS, ContextQuery, Limits, Query
from threadfold.workers.threads.results import (
    Appended,
    Context,
    Copied,
    Format,
    Pruned,
    Searched,
    Skipped,
    State,
    Status,
    ThreadCount,
    ThreadList,
    ThreadRow,
)

UNREACHABLE: Final = "thread state is unreachable; retry (an append with the same delta_id)"


class _Refusals:
    """``with refusals:``: the engine's failures as the tree's refusals, a message
    LangChain would not accept (422, its path the field), an unreachable Redis (503), a
    full one (503). One object, entered by every operation: a class, not a
    ``contextlib.contextmanager``, whose generator and wrapper each call would build
    (bench.ab.handlers, the API's instructions per POST against the code before the
    service: x1.026-1.033 with that, x1.013 with this)."""

    def __enter__(self) -> None:
        return None

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: object
    ) -> None:
        if exc is None:
            return
        if isinstance(exc, InvalidMessage):
            raise InvalidInput(str(exc), field=exc.path or None) from exc
        if isinstance(exc, redis.ConnectionError | redis.TimeoutError):
            raise Unavailable(UNREACHABLE) from exc
        # A script's refusal is already the tree's RedisFull (redisio.client.typed); a
        # plain command's is redis-py's own.
        if isinstance(exc, redis.exceptions.OutOfMemoryError):  # an operator's to mend
            raise RedisFull() from exc


refusals: Final = _Refusals()


@dataclass(frozen=True, slots=True)
class Target:
    """A checked thread: its id, and its ref in the tenant's keyspace."""

    thread_id: str
    ref: str


def target(tenant: str, thread_id: str) -> Target:
    name = query.thread_id(thread_id)
    return Target(name, make_ref(tenant, name))


def followed(
    tenant: str, thread_id: str, after: str | None, format: object
) -> tuple[Target, str | None, Format]:
    """A subscription's checked arguments: the thread, the version to resume after (a
    version the follower holds), the format it is sent in."""
    at = target(tenant, thread_id)  # the id first, as every operation checks it
    resume = None if after is None else query.version(after, "after")
    return at, resume, query.format_of(format)


#: One delta of a bulk: ``(thread_id, messages, delta_id)``, and the metadata of the
#: thread it creates as a fourth, if any.
Given = (
    tuple[str, Sequence[Any], str | None]
    | tuple[str, Sequence[Any], str | None, Mapping[str, Any] | None]
)


def deltas(tenant: str, given: Sequence[Given]) -> list[Delta]:
    """The deltas of an append, in the tenant (the producer checks every id, message and
    metadata)."""
    return [Delta(g[0], g[1], g[2], tenant, g[3] if len(g) > 3 else None) for g in given]


def appended(result: Enqueued) -> Appended:
    return Appended(result.thread_id, result.version, result.accepted, result.duplicate, result.ids)


def status_of(thread_id: str, found: ThreadStatus | None) -> Status:
    if found is None:
        raise never_written(thread_id)
    return Status(
        thread_id,
        found.version,
        found.last_enqueued,
        found.backlog,
        found.messages,
        found.last_commit_ms,
        found.attempts,
        bool(found.quarantined),
        found.quarantined or None,
        found.quarantined_entry or None,
        found.dirty_since_ms,
        tuple(Skipped(s.entry, s.reason, s.at_ms) for s in found.skipped),
        **_lifetime(found),
    )


def _lifetime(found: ThreadStatus) -> dict[str, Any]:
    """What a status and a row show of a thread's metadata and lifetime."""
    return {
        "metadata": decoded(found.metadata),
        "created_ms": found.created_ms,
        "ttl_seconds": None if found.ttl_ms is None else found.ttl_ms / 1000,
        "pinned": found.pinned,
        "expires_at_ms": found.expires_ms,
    }


def row_of(ref: str, found: ThreadStatus, activity: int) -> ThreadRow:
    return ThreadRow(
        ref.partition("/")[2],  # as stored, unchecked: a list never fails on one row
        found.version,
        found.messages,
        found.backlog,
        found.lag_ms,
        bool(found.quarantined),
        found.quarantined or None,
        found.last_commit_ms,
        activity,
        found.last_enqueued,
        **_lifetime(found),
    )


def patched(found: bool | Refused, thread_id: str) -> None:
    """An update's answer: done, or why not."""
    if isinstance(found, Refused):
        raise lifecycle.refused(found)
    if not found:
        raise never_written(thread_id)


def searched(s: Search, rows: Sequence[Row], after: tuple[int, str] | None) -> Searched:
    threads = tuple(row_of(ref, row, activity) for ref, row, activity in rows)
    return Searched(threads, None if after is None else lifecycle.cursor_of(s, after))


#: A copy of an empty state: a thread must start with a delta, and this one leaves it
#: empty (RemoveMessage of every message, on nothing).
_EMPTY: Final = ({"type": "remove", "id": REMOVE_ALL_MESSAGES, "content": ""},)


def copy_delta(tenant: str, plan: Copy, page: StatePage) -> Delta:
    """The copy's first delta: the source's messages, ids and all, in order (on an empty
    thread, ``add_messages`` of them is exactly them)."""
    # Its delta_id is not the delta's: a copy's retry is known by plan.identity.
    return Delta(plan.to, list(page.messages) or list(_EMPTY), None, tenant)


def copied(source: str, plan: Copy, page: StatePage, made: Enqueued | None) -> Copied:
    """The copy's answer (a retry of one with its delta_id is answered as it was)."""
    if made is None:
        raise Conflict(f"thread {plan.to!r} exists; a copy makes a new thread", field="to")
    return Copied(plan.to, source, page.version, made.version, page.total)


class _Checks:
    """What both forms check before any I/O: the request's sizes (the HTTP API's limits;
    a direct client has none); and the tenant's share of writes (``tenant_rate``), an
    append's, a bulk's or a copy's, which the producer takes once the write is
    validated, before anything is written."""

    def __init__(self, limits: Limits, settings: Settings) -> None:
        self.limits = limits
        rate = settings.tenant_rate
        self.budget = TenantBudget(rate, settings.tenant_burst) if rate > 0 else None

    def admission(self, tenant: str, deltas: int) -> Callable[[], None] | None:
        """The tenant's admission of a write of ``deltas``, for the producer to make
        once the write is validated and before it is sent (:mod:`.admission`)."""
        return None if self.budget is None else self.budget.admission(tenant, deltas)

    def sized(self, given: Sequence[Any], field: str, top: int | None, what: str) -> None:
        if top is not None and len(given) > top:
            raise InvalidInput(f"{field}: at most {top} {what}", field=field)

    def append(self, messages: Sequence[Any], field: str) -> None:
        self.sized(messages, field, self.limits.max_messages, "messages per delta")

    def bulk(self, given: Sequence[Given]) -> None:
        self.sized(given, "deltas", self.limits.max_deltas, "deltas per request")
        for i, item in enumerate(given):
            self.append(item[1], f"deltas[{i}].messages")


class Threads:
    """The thread service, synchronous: one per process (or per direct client)."""

    def __init__(
        self,
        settings: Settings,
        producer: Producer,
        store: Store,
        *,
        limits: Limits = NO_LIMITS,
        name: str = "threadfold",
    ) -> None:
        self.settings = settings
        self.producer = producer
        self.store = store
        self.checks = _Checks(limits, settings)
        self.name = name  # what CLIENT LIST shows of a subscription's connection

    def append(
        self,
        tenant: str,
        thread_id: str,
        messages: Sequence[Any],
        delta_id: str | None = None,
        metadata: Mapping[str, Any] | None = None,
    ) -> Appended:
        """Append one delta; ``metadata`` is the thread's if this append creates it."""
        self.checks.append(messages, "messages")
        delta = Delta(thread_id, messages, delta_id, tenant, metadata)
        with refusals:
            [result] = self.producer.enqueue_many(
                [delta], path="", admit=self.checks.admission(tenant, 1)
            )
        return appended(result)

    def append_many(self, tenant: str, given: Sequence[Given]) -> list[Appended]:
        """Many deltas, of many threads, in one round trip; all checked before any is
        appended. A delta's metadata is its thread's if it creates the thread."""
        self.checks.bulk(given)
        admit = self.checks.admission(tenant, len(given))
        with refusals:
            results = self.producer.enqueue_many(deltas(tenant, given), "deltas", admit=admit)
        return [appended(r) for r in results]

    def state(self, tenant: str, thread_id: str, q: Query) -> State:
        at = target(tenant, thread_id)
        with refusals:
            if q.min_version is not None:
                self._wait(at, q.min_version, q.wait)
            found = reads.checked(self._page(at, q), at.thread_id, q)
            if self.settings.ttl_refresh_on_read:
                self.store.touch(at.ref, self.settings.thread_ttl_ms)
        return reads.served(found, at.thread_id, q)

    def _page(self, at: Target, q: Query) -> StatePage | None:
        if q.at_version is None:
            return self.store.read_state(at.ref, q.mode, q.anchor, q.limit)
        try:
            whole = travel(
                self.store,
                at.ref,
                reads.redis_id(q.at_version),
                merge_chunks=self.settings.merge_chunks,
            )
        except NotReplayable as exc:
            raise reads.travel_error(exc, at.thread_id, q.at_version) from exc
        return reads.page_of(whole, q.mode, q.anchor, q.limit)

    def context(self, tenant: str, thread_id: str, q: ContextQuery) -> Context:
        """The thread's context window: its messages trimmed to ``q.trim``'s budget
        (LangChain's ``trim_messages``, tool pairs kept whole), at a version or live."""
        at = target(tenant, thread_id)
        with refusals:
            if q.min_version is not None:
                self._wait(at, q.min_version, q.wait)
            found, win = self._window(at, q)
            if self.settings.ttl_refresh_on_read:
                self.store.touch(at.ref, self.settings.thread_ttl_ms)
        return reads.context_served(win, found, at.thread_id, q)

    def _window(self, at: Target, q: ContextQuery) -> tuple[ContextRead, Window]:
        if q.at_version is not None:
            whole = self._page(at, Query(at_version=q.at_version))
            return reads.replayed_window(whole, at.thread_id, q)
        want = q.trim.max_tokens
        while True:
            found = self.store.read_context(at.ref, q.trim.strategy, want)
            win = reads.windowed(found, at.thread_id, q)
            if not isinstance(win, int):
                assert found is not None  # windowed() refused a missing thread
                return found, win
            want = win

    def wait_for(self, tenant: str, thread_id: str, version: str, timeout: float) -> str:
        """The thread's version once it reached ``version``, within ``timeout`` seconds."""
        at = target(tenant, thread_id)
        wanted, seconds = query.version(version), query.timeout(timeout)
        with refusals:
            return self._wait(at, wanted, seconds)

    def _wait(self, at: Target, wanted: str, seconds: float) -> str:
        waiting = reads.Waiting(at.thread_id, wanted, seconds)
        while True:
            now = self.store.version(at.ref)
            pause = waiting.pause(now)
            if pause is None:
                assert now is not None  # pause() refused a missing thread
                return now
            time.sleep(pause)

    def status(self, tenant: str, thread_id: str) -> Status:
        at = target(tenant, thread_id)
        with refusals:
            return status_of(at.thread_id, self.store.status(at.ref, self.settings.thread_ttl_ms))

    def delete(self, tenant: str, thread_id: str) -> None:
        """Delete the thread and its log; NotFound when there is none."""
        at = target(tenant, thread_id)
        with refusals:
            if not self.store.delete(at.ref):
                raise never_written(at.thread_id)

    def threads(self, tenant: str, limit: int) -> ThreadList:
        """The tenant's ``limit`` most recently active threads, latest first."""
        with refusals:
            found = threads_of(
                self.store.client, self.store.keyspace, tenant, limit, self.settings.thread_ttl_ms
            )
        return ThreadList(tuple(row_of(ref, row, activity) for ref, row, activity in found))

    # -- lifecycle -------------------------------------------------------------------------

    def update(self, tenant: str, thread_id: str, change: Update) -> Status:
        """Change the thread's metadata, TTL and pin together (all or none); its status
        after."""
        at = target(tenant, thread_id)
        ttl = self.settings.thread_ttl_ms
        with refusals:
            if not change.empty:
                found = self.store.patch(
                    at.ref, change.ttl, change.pinned, ttl, md_pairs(change.metadata)
                )
                patched(found, at.thread_id)
            return status_of(at.thread_id, self.store.status(at.ref, ttl))

    def search(self, tenant: str, s: Search) -> Searched:
        """A page of the tenant's threads ``s`` finds, in its order."""
        with refusals:
            rows, after = search_threads(
                self.store.client, self.store.keyspace, tenant, s, self.settings.thread_ttl_ms
            )
        return searched(s, rows, after)

    def count(self, tenant: str, s: Search) -> ThreadCount:
        with refusals:
            return ThreadCount(count_threads(self.store.client, self.store.keyspace, tenant, s))

    def copy(self, tenant: str, thread_id: str, plan: Copy) -> Copied:
        """A new thread whose state is exactly this one's at ``plan.at_version`` (or its
        current version), with its metadata; 409 on ``to`` when that thread exists."""
        at = target(tenant, thread_id)
        q = Query(at_version=plan.at_version)
        with refusals:
            page, stored = self._source(at, q)
            made = self.producer.create(
                copy_delta(tenant, plan, page),
                plan.metadata_of(stored),
                admit=self.checks.admission(tenant, 1),
                identity=plan.identity,
            )
        return copied(at.thread_id, plan, page, made)

    def _source(self, at: Target, q: Query) -> tuple[StatePage, Mapping[str, bytes]]:
        """A copy's source: its state and metadata, of one version
        (:func:`.lifecycle.sourced`)."""
        if q.at_version is None:
            return lifecycle.sourced(self.store.copy_source(at.ref), at.thread_id)
        page = reads.checked(self._page(at, q), at.thread_id, q)
        return lifecycle.sourced(page, at.thread_id, self.store.status(at.ref))

    def prune(self, p: Prune, progress: Callable[[int], None] | None = None) -> Pruned:
        """Remove the threads ``p`` names (never a pinned one); ``progress`` is told of
        each bucket done."""
        with refusals:
            n = prune_threads(self.store.client, self.store.keyspace, p, progress)
        return Pruned(n, p.dry_run)

    def subscribe(
        self, tenant: str, thread_id: str, *, after: str | None, format: object
    ) -> Iterator[Event]:
        """The thread's events while the caller iterates, on a listener connection of
        its own (:func:`threadfold.workers.feed.subscription.follow`). Its arguments are
        checked when iteration starts, as an asyncio subscription's are."""
        at, resume, fmt = followed(tenant, thread_id, after, format)
        listener = entry.listener(self.settings, name=self.name)
        feed = self.settings.keyspace.thread(at.ref).feed
        steps = subscription.Steps(at.thread_id, at.ref, feed, fmt)
        try:
            yield from subscription.follow(self.store, listener, steps, resume)
        finally:
            listener.close()


class AsyncThreads:
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
        self.settings = settings
        self.producer = producer
        self.store = store
        self.checks = _Checks(limits, settings)
        self.limits = limits
        self.name = name
        #: Events a subscription may leave unread before the hub ends it (it is then
        #: resumed from the feed); by default a direct subscription's, read when the hub
        #: is made.
        self.queue_events = queue_events
        self._hub: Hub | None = None  # made by the first subscribe()

    async def append(
        self,
        tenant: str,
        thread_id: str,
        messages: Sequence[Any],
        delta_id: str | None = None,
        metadata: Mapping[str, Any] | None = None,
    ) -> Appended:
        self.checks.append(messages, "messages")
        delta = Delta(thread_id, messages, delta_id, tenant, metadata)
        with refusals:
            [result] = await self.producer.enqueue_many(
                [delta], path="", admit=self.checks.admission(tenant, 1)
            )
        return appended(result)

    async def append_many(self, tenant: str, given: Sequence[Given]) -> list[Appended]:
        self.checks.bulk(given)
        admit = self.checks.admission(tenant, len(given))
        with refusals:
            results = await self.producer.enqueue_many(
                deltas(tenant, given), "deltas", admit=admit
            )
        return [appended(r) for r in results]

    async def state(self, tenant: str, thread_id: str, q: Query) -> State:
        at = target(tenant, thread_id)
        with refusals:
            if q.min_version is not None:
                await self._wait(at, q.min_version, q.wait)
            found = reads.checked(await self._page(at, q), at.thread_id, q)
            if self.settings.ttl_refresh_on_read:
                await self.store.touch(at.ref, self.settings.thread_ttl_ms)
        return reads.served(found, at.thread_id, q)

    async def state_bodies(self, tenant: str, thread_id: str, q: Query) -> StateBodies:
        """:meth:`state` of the live thread with its messages as stored, not rendered: the
        HTTP API's JSON cache encodes them itself (LangChain's form, no ``at_version``)."""
        assert q.at_version is None and q.format == "langchain"  # the caller's to choose
        at = target(tenant, thread_id)
        with refusals:
            if q.min_version is not None:
                await self._wait(at, q.min_version, q.wait)
            found = await self.store.read_state_bodies(at.ref, q.mode, q.anchor, q.limit)
            checked = reads.checked(found, at.thread_id, q)
            if self.settings.ttl_refresh_on_read:
                await self.store.touch(at.ref, self.settings.thread_ttl_ms)
            return checked

    async def _page(self, at: Target, q: Query) -> StatePage | None:
        if q.at_version is None:
            return await self.store.read_state(at.ref, q.mode, q.anchor, q.limit)
        try:
            whole = await atravel(
                self.store,
                at.ref,
                reads.redis_id(q.at_version),
                merge_chunks=self.settings.merge_chunks,
            )
        except NotReplayable as exc:
            raise reads.travel_error(exc, at.thread_id, q.at_version) from exc
        return reads.page_of(whole, q.mode, q.anchor, q.limit)

    async def context(self, tenant: str, thread_id: str, q: ContextQuery) -> Context:
        at = target(tenant, thread_id)
        with refusals:
            if q.min_version is not None:
                await self._wait(at, q.min_version, q.wait)
            found, win = await self._window(at, q)
            if self.settings.ttl_refresh_on_read:
                await self.store.touch(at.ref, self.settings.thread_ttl_ms)
        return reads.context_served(win, found, at.thread_id, q)

    async def _window(self, at: Target, q: ContextQuery) -> tuple[ContextRead, Window]:
        if q.at_version is not None:
            whole = await self._page(at, Query(at_version=q.at_version))
            return reads.replayed_window(whole, at.thread_id, q)
        want = q.trim.max_tokens
        while True:
            found = await self.store.read_context(at.ref, q.trim.strategy, want)
            win = reads.windowed(found, at.thread_id, q)
            if not isinstance(win, int):
                assert found is not None  # windowed() refused a missing thread
                return found, win
            want = win

    async def wait_for(self, tenant: str, thread_id: str, version: str, timeout: float) -> str:
        at = target(tenant, thread_id)
        wanted, seconds = query.version(version), query.timeout(timeout)
        with refusals:
            return await self._wait(at, wanted, seconds)

    async def _wait(self, at: Target, wanted: str, seconds: float) -> str:
        waiting = reads.Waiting(at.thread_id, wanted, seconds)
        while True:
            now = await self.store.version(at.ref)
            pause = waiting.pause(now)
            if pause is None:
                assert now is not None  # pause() refused a missing thread
                return now
            await asyncio.sleep(pause)

    async def status(self, tenant: str, thread_id: str) -> Status:
        at = target(tenant, thread_id)
        with refusals:
            found = await self.store.status(at.ref, self.settings.thread_ttl_ms)
            return status_of(at.thread_id, found)

    async def delete(self, tenant: str, thread_id: str) -> None:
        at = target(tenant, thread_id)
        with refusals:
            if not await self.store.delete(at.ref):
                raise never_written(at.thread_id)

    async def threads(self, tenant: str, limit: int) -> ThreadList:
        """The tenant's ``limit`` most recently active threads, latest first."""
        with refusals:
            found = await recent_threads(
                self.store.client, self.store.keyspace, tenant, limit, self.settings.thread_ttl_ms
            )
        return ThreadList(tuple(row_of(ref, row, activity) for ref, row, activity in found))

    # -- lifecycle -------------------------------------------------------------------------

    async def update(self, tenant: str, thread_id: str, change: Update) -> Status:
        at = target(tenant, thread_id)
        ttl = self.settings.thread_ttl_ms
        with refusals:
            if not change.empty:
                found = await self.store.patch(
                    at.ref, change.ttl, change.pinned, ttl, md_pairs(change.metadata)
                )
                patched(found, at.thread_id)
            return status_of(at.thread_id, await self.store.status(at.ref, ttl))

    async def search(self, tenant: str, s: Search) -> Searched:
        with refusals:
            rows, after = await asearch_threads(
                self.store.client, self.store.keyspace, tenant, s, self.settings.thread_ttl_ms
            )
        return searched(s, rows, after)

    async def count(self, tenant: str, s: Search) -> ThreadCount:
        with refusals:
            n = await acount_threads(self.store.client, self.store.keyspace, tenant, s)
        return ThreadCount(n)

    async def copy(self, tenant: str, thread_id: str, plan: Copy) -> Copied:
        at = target(tenant, thread_id)
        q = Query(at_version=plan.at_version)
        with refusals:
            page, stored = await self._source(at, q)
            made = await self.producer.create(
                copy_delta(tenant, plan, page),
                plan.metadata_of(stored),
                admit=self.checks.admission(tenant, 1),
                identity=plan.identity,
            )
        return copied(at.thread_id, plan, page, made)

    async def _source(self, at: Target, q: Query) -> tuple[StatePage, Mapping[str, bytes]]:
        if q.at_version is None:
            return lifecycle.sourced(await self.store.copy_source(at.ref), at.thread_id)
        page = reads.checked(await self._page(at, q), at.thread_id, q)
        return lifecycle.sourced(page, at.thread_id, await self.store.status(at.ref))

    async def prune(self, p: Prune) -> Pruned:
        with refusals:
            n = await aprune_threads(self.store.client, self.store.keyspace, p)
        return Pruned(n, p.dry_run)

    def hub(self, *, max_subscribers: int) -> Hub:
        """The one follower of thread feeds that all of this service's subscriptions
        share (one Pub/Sub connection), made on first use."""
        if self._hub is None:
            self._hub = entry.ahub(
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

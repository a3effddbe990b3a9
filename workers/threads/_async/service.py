"""The thread service's operations, written once: this asyncio source, and the
synchronous form generated from it (``workers/threads/_sync/service.py``).

Each method runs one operation of the table (:mod:`threadfold.workers.threads.operations`)
in a tenant: its checks (the operation's own ``checked``, the request's sizes, the
tenant's share), its I/O through the store and the producer, and its answer
(:mod:`threadfold.workers.threads.steps`). :meth:`AsyncService.run` runs any operation
by its name: the HTTP API's routes and the direct clients call it.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator, Callable, Iterable, Mapping, Sequence
from typing import Any, TypeVar

from threadfold.core.context import Window
from threadfold.core.errors import InvalidInput, never_written
from threadfold.core.results import (
    Appended,
    Context,
    Copied,
    Delta,
    Pruned,
    Searched,
    State,
    Status,
    ThreadCount,
    ThreadList,
)
from threadfold.workers.ingest.producer import AsyncProducer
from threadfold.workers.replay.prefix import NotReplayable
from threadfold.workers.replay.replay import atravel
from threadfold.workers.settings import Settings
from threadfold.workers.storage.astore import AsyncStore
from threadfold.workers.storage.context import ContextRead
from threadfold.workers.storage.read_state import StateBodies, StatePage
from threadfold.workers.threads import operations as ops
from threadfold.workers.threads import reads, steps
from threadfold.workers.threads._async.checkpoints import AsyncCheckpointOps
from threadfold.workers.threads._async.listing import (
    count_threads,
    prune_threads,
    recent_threads,
    search_threads,
)
from threadfold.workers.threads.query import NO_LIMITS, ContextQuery, Limits, Query
from threadfold.workers.threads.steps import Target, refusals, target

R = TypeVar("R")


class AsyncService(AsyncCheckpointOps):
    """The thread service's operations, asyncio: one per process (or per client)."""

    def __init__(
        self,
        settings: Settings,
        producer: AsyncProducer,
        store: AsyncStore,
        *,
        limits: Limits = NO_LIMITS,
        name: str = "threadfold",
    ) -> None:
        self.settings = settings
        self.producer = producer
        self.store = store
        self.checks = steps.Checks(limits, settings)
        self.limits = limits
        self.name = name  # what CLIENT LIST shows of a subscription's connection

    async def run(self, tenant: str, op: ops.Op[R]) -> R:
        """Run ``op`` in ``tenant``: the method of its name."""
        method: Any = getattr(self, op.name)
        result: R = await method(tenant, op)
        return result

    # -- appends ---------------------------------------------------------------------------

    async def append(self, tenant: str, op: ops.Append) -> Appended:
        """Append one delta; its metadata is the thread's if this append creates it."""
        self.checks.append(op.messages, "messages")
        delta = Delta(op.thread_id, op.messages, op.delta_id, op.metadata)
        with refusals:
            [result] = await self.producer.enqueue_many(
                [delta], path="", tenant=tenant, admit=self.checks.admission(tenant, 1)
            )
        return result

    async def append_many(self, tenant: str, op: ops.AppendMany) -> list[Appended]:
        """Many deltas, of many threads, in one round trip; all checked before any is
        appended."""
        self.checks.bulk(op.deltas)
        admit = self.checks.admission(tenant, len(op.deltas))
        with refusals:
            return await self.producer.enqueue_many(
                op.deltas, "deltas", tenant=tenant, admit=admit
            )

    async def append_stream(
        self, tenant: str, bulks: Iterable[Sequence[ops.Delta]]
    ) -> AsyncGenerator[list[Appended], None]:
        """Append bulk after bulk (a batch job: a bulk load, a replay), each as
        :meth:`append_many`; yields each bulk's results, in order. A bad bulk is refused
        as ``bulks[k]...`` once the bulks before it are appended and yielded."""
        for k, bulk in enumerate(bulks):
            try:
                done = await self.append_many(tenant, ops.AppendMany(deltas=bulk))
            except InvalidInput as exc:
                raise exc.under(f"bulks[{k}].") from None
            yield done

    # -- reads -----------------------------------------------------------------------------

    async def state(self, tenant: str, op: ops.ReadState) -> State:
        at = target(tenant, op.thread_id)  # the id first, as the path comes first
        q = op.checked(self.limits)
        with refusals:
            if q.min_version is not None:
                await self._wait(at, q.min_version, q.wait)
            found = reads.checked(await self._page(at, q), at.thread_id, q)
            await self._touched(at)
        return reads.served(found, at.thread_id, q)

    async def state_bodies(self, tenant: str, op: ops.ReadState) -> StateBodies | None:
        """:meth:`state` of the live thread with its messages as stored, not rendered:
        the HTTP API's JSON cache encodes them itself. None when the read is not one it
        can serve so (another format, or time travel): then :meth:`state`."""
        at = target(tenant, op.thread_id)
        q = op.checked(self.limits)
        if q.at_version is not None or q.format != "langchain":
            return None
        with refusals:
            if q.min_version is not None:
                await self._wait(at, q.min_version, q.wait)
            found = await self.store.read_state_bodies(at.ref, q.mode, q.anchor, q.limit)
            checked = reads.checked(found, at.thread_id, q)
            await self._touched(at)
            return checked

    async def _touched(self, at: Target) -> None:
        if self.settings.ttl_refresh_on_read:
            await self.store.touch(at.ref, self.settings.thread_ttl_ms)

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

    async def context(self, tenant: str, op: ops.ReadContext) -> Context:
        """The thread's context window: its messages trimmed to the budget (LangChain's
        ``trim_messages``, tool pairs kept whole), at a version or live."""
        at = target(tenant, op.thread_id)
        q = op.checked(self.limits)
        with refusals:
            if q.min_version is not None:
                await self._wait(at, q.min_version, q.wait)
            found, win = await self._window(at, q)
            await self._touched(at)
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

    async def wait_for(self, tenant: str, op: ops.WaitFor) -> str:
        """The thread's version once it reached the one asked, within the timeout."""
        at = target(tenant, op.thread_id)
        wanted, seconds = op.checked()
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

    async def status(self, tenant: str, op: ops.ReadStatus) -> Status:
        at = target(tenant, op.thread_id)
        with refusals:
            found = await self.store.status(at.ref, self.settings.thread_ttl_ms)
            return steps.status_of(at.thread_id, found)

    async def threads(self, tenant: str, op: ops.Threads) -> ThreadList:
        """The tenant's most recently active threads, latest first."""
        limit = op.checked()
        with refusals:
            found = await recent_threads(
                self.store.client, self.store.keyspace, tenant, limit, self.settings.thread_ttl_ms
            )
        return ThreadList(tuple(found))

    # -- lifecycle -------------------------------------------------------------------------

    async def delete(self, tenant: str, op: ops.Delete) -> None:
        """Delete the thread and its log; NotFound when there is none."""
        at = target(tenant, op.thread_id)
        with refusals:
            if not await self.store.delete(at.ref):
                raise never_written(at.thread_id)

    async def update(self, tenant: str, op: ops.Update) -> Status:
        """Change the thread's metadata, TTL and pin together (all or none); its status
        after."""
        at = target(tenant, op.thread_id)
        change = op.checked()
        ttl = self.settings.thread_ttl_ms
        with refusals:
            if not change.empty:
                found = await self.store.patch(
                    at.ref, change.ttl, change.pinned, ttl, steps.md_pairs(change.metadata)
                )
                steps.patched(found, at.thread_id)
            return steps.status_of(at.thread_id, await self.store.status(at.ref, ttl))

    async def search(self, tenant: str, op: ops.Search) -> Searched:
        """A page of the tenant's threads the search finds, in its order."""
        s = op.checked()
        with refusals:
            rows, after = await search_threads(
                self.store.client, self.store.keyspace, tenant, s, self.settings.thread_ttl_ms
            )
        return steps.searched(s, rows, after)

    async def count(self, tenant: str, op: ops.Count) -> ThreadCount:
        s = op.checked()
        with refusals:
            n = await count_threads(self.store.client, self.store.keyspace, tenant, s)
        return ThreadCount(n)

    async def copy(self, tenant: str, op: ops.Copy) -> Copied:
        """A new thread whose state is exactly this one's at the version asked (or its
        current one), with its metadata; 409 on ``to`` when that thread exists."""
        at = target(tenant, op.thread_id)
        plan = op.checked(tenant, at.thread_id)
        q = Query(at_version=plan.at_version)
        with refusals:
            page, stored = await self._source(at, q)
            made = await self.producer.create(
                steps.copy_delta(plan, page),
                plan.metadata_of(stored),
                tenant=tenant,
                admit=self.checks.admission(tenant, 1),
                identity=plan.identity,
            )
        return steps.copied(at.thread_id, plan, page, made)

    async def _source(self, at: Target, q: Query) -> tuple[StatePage, Mapping[str, bytes]]:
        """A copy's source: its state and metadata, of one version (:func:`steps.sourced`)."""
        if q.at_version is None:
            return steps.sourced(await self.store.copy_source(at.ref), at.thread_id)
        page = reads.checked(await self._page(at, q), at.thread_id, q)
        return steps.sourced(page, at.thread_id, await self.store.stored(at.ref))

    async def prune(
        self, tenant: str | None, op: ops.Prune, progress: Callable[[int], None] | None = None
    ) -> Pruned:
        """Remove the threads the prune names (never a pinned one); ``progress`` is told
        of each bucket done. A tenant of None prunes every tenant's (the operator's
        command)."""
        p = op.checked(tenant)
        with refusals:
            n = await prune_threads(self.store.client, self.store.keyspace, p, progress)
        return Pruned(n, p.dry_run)

"""A thread's reads and its delete over an asyncio Redis client (the asyncio thread
service's: the HTTP API's and the AsyncClient's); time travel's read of a log prefix is
the thread service's (:func:`threadfold.workers.replay.replay.atravel`)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from threadfold.core.keys import Keyspace
from threadfold.core.results import Status
from threadfold.workers.redisio.client import AsyncRedis, Call, arun, arun_many
from threadfold.workers.redisio.durable import Wait, awrite
from threadfold.workers.storage import (
    context,
    copy_source,
    delete,
    feed,
    follow,
    patch,
    read_state,
    status,
    touch,
)
from threadfold.workers.storage.context import ContextRead, Direction
from threadfold.workers.storage.meta import VERSION_FIELDS, version_of
from threadfold.workers.storage.read_state import StateBodies, StatePage, WholeThread
from threadfold.workers.storage.status import Stored


class AsyncStore:
    """Thread reads for the API: consistent pages, status, deletion, readiness."""

    def __init__(self, client: AsyncRedis, keyspace: Keyspace, wait: Wait | None = None) -> None:
        self.client = client
        self.keyspace = keyspace
        #: What a delete or a patch waits for before it is answered (durability
        #: 'replica'); a worker's commits never wait (nobody is answered for them).
        self.wait = wait

    async def read_state(
        self, ref: str, mode: str = "all", anchor: str = "", limit: int = -1
    ) -> StatePage | None:
        k = self.keyspace.thread(ref)
        raw = await read_state.aexchange(self.client, k, mode, anchor, limit)
        return read_state.parse(raw, mode, limit)

    async def copy_source(self, ref: str) -> tuple[StatePage, dict[str, bytes]] | None:
        """The whole state and the metadata, in one read (a copy's source)."""
        call = copy_source.call(self.keyspace.thread(ref))
        return copy_source.parse(await arun(self.client, call))

    async def read_context(self, ref: str, direction: Direction, want: int) -> ContextRead | None:
        """:meth:`Store.read_context <threadfold.workers.storage.store.Store.read_context>`."""
        call = context.call(self.keyspace.thread(ref), direction, want)
        return context.parse(await arun(self.client, call))

    async def read_state_bodies(
        self, ref: str, mode: str = "all", anchor: str = "", limit: int = -1
    ) -> StateBodies | None:
        """:meth:`read_state` without decoding the messages."""
        k = self.keyspace.thread(ref)
        raw = await read_state.aexchange(self.client, k, mode, anchor, limit)
        return read_state.parse_bodies(raw, mode, limit)

    async def version(self, ref: str) -> str | None:
        """The thread's version (cursor), or None when it was never written."""
        meta = self.keyspace.thread(ref).meta
        return version_of(await self.client.hmget(meta, [*VERSION_FIELDS]))

    async def status(self, ref: str, ttl_ms: int = 0) -> Status | None:
        found = await self.stored(ref, ttl_ms)
        return None if found is None else found.status

    async def stored(self, ref: str, ttl_ms: int = 0) -> Stored | None:
        """The status, with the count of entries applied and the metadata as stored."""
        call = status.call(self.keyspace.thread(ref), ttl_ms)
        return status.parse(await arun(self.client, call), ref)

    async def snapshot(self, ref: str) -> WholeThread | None:
        """The whole thread with its messages' positions (a follower's start)."""
        raw = await read_state.aexchange(self.client, self.keyspace.thread(ref))
        return read_state.parse_snapshot(raw)

    async def feed_after(self, ref: str, after: str, count: int = feed.PAGE) -> feed.FeedRead:
        """The change events after version ``after``, or why there are none."""
        call = feed.call(self.keyspace.thread(ref), after, count)
        return feed.parse(await arun(self.client, call))

    async def follow(self, refs: Sequence[str], window_ms: int) -> None:
        """Mark threads followed for ``window_ms``: their commits keep their change
        events in their feeds meanwhile (pipelined)."""
        calls = [follow.call(self.keyspace.thread(ref), window_ms) for ref in refs]
        await arun_many(self.client, calls)

    async def delete(self, ref: str) -> bool:
        call = delete.call(self.keyspace.thread(ref))
        return delete.parse(await awrite(self.client, call, self.wait))

    async def patch(
        self, ref: str, ttl: str, pinned: str, ttl_ms: int, changes: Sequence[str | bytes]
    ) -> bool | patch.Refused:
        call = patch.call(self.keyspace.thread(ref), ttl, pinned, ttl_ms, changes)
        return patch.parse(await awrite(self.client, call, self.wait))

    async def touch(self, ref: str, ttl_ms: int) -> None:
        await arun(self.client, touch.call(self.keyspace.thread(ref), ttl_ms))

    async def checkpoint_read(self, call: Call) -> Any:
        """A LangGraph saver's read (a ``checkpoint_read`` call; its module parses it)."""
        return await arun(self.client, call)

    async def checkpoint_write(self, call: Call) -> Any:
        """A LangGraph saver's write (put, writes, removal), durable as a delete is."""
        return await awrite(self.client, call, self.wait)

    async def ping(self) -> bool:
        return bool(await self.client.ping())

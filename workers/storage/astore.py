"""The reads and deletes of the HTTP API, over an asyncio Redis client."""

from __future__ import annotations

from typing import Any

from threadfold.core.keys import Keyspace
from threadfold.workers.redisio.client import AsyncClient, Call, Item, arun
from threadfold.workers.storage import delete, feed, read_state, status
from threadfold.workers.storage.meta import VERSION_FIELDS, version_of
from threadfold.workers.storage.read_state import Snapshot, StateBodies, StatePage
from threadfold.workers.storage.status import ThreadStatus
from threadfold.workers.threads.prefix import NotReplayable, Retrying, travelling
from threadfold.workers.threads.replay import at_version


class AsyncStore:
    """Thread reads for the API: consistent pages, status, deletion, readiness."""

    def __init__(self, client: AsyncClient, keyspace: Keyspace) -> None:
        self.client = client
        self.keyspace = keyspace

    async def read_state(
        self, ref: str, mode: str = "all", anchor: str = "", limit: int = -1
    ) -> StatePage | None:
        call = read_state.call(self.keyspace.thread(ref), mode, anchor, limit)
        return read_state.parse(await arun(self.client, call), mode, limit)

    async def read_state_bodies(
        self, ref: str, mode: str = "all", anchor: str = "", limit: int = -1
    ) -> StateBodies | None:
        """:meth:`read_state` without decoding the messages."""
        call = read_state.call(self.keyspace.thread(ref), mode, anchor, limit)
        return read_state.parse_bodies(await arun(self.client, call), mode, limit)

    async def version(self, ref: str) -> str | None:
        """The thread's version (cursor), or None when it was never written."""
        meta = self.keyspace.thread(ref).meta
        return version_of(await self.client.hmget(meta, [*VERSION_FIELDS]))

    async def status(self, ref: str) -> ThreadStatus | None:
        return status.parse(await arun(self.client, status.call(self.keyspace.thread(ref))))

    async def snapshot(self, ref: str) -> Snapshot | None:
        """The whole thread with its messages' positions (a follower's start)."""
        call = read_state.call(self.keyspace.thread(ref))
        return read_state.parse_snapshot(await arun(self.client, call))

    async def feed_after(self, ref: str, after: str, count: int = feed.PAGE) -> feed.FeedRead:
        """The change events after version ``after``, or why there are none."""
        call = feed.call(self.keyspace.thread(ref), after, count)
        return feed.parse(await arun(self.client, call))

    async def delete(self, ref: str) -> bool:
        return delete.parse(await arun(self.client, delete.call(self.keyspace.thread(ref))))

    async def travel(self, ref: str, upto: str, *, merge_chunks: bool) -> StatePage:
        """The thread as of version ``upto`` (time travel): the live state with the log
        entries after it folded on when ``upto`` is at or after the cursor, else the log
        replayed from its first entry; read consistently
        (:mod:`threadfold.workers.threads.prefix`), a read
        overtaken by a trim or a delete read again. :class:`NotReplayable` says why
        there is no such state (trimmed, never written, deleted, before birth, poison,
        moving)."""
        reading = Retrying(ref, travelling(self.keyspace, upto))
        while reading.outcome is None:
            reading.feed([await self._ordered(item) for item in reading.calls()])
        if isinstance(reading.outcome, NotReplayable):
            raise reading.outcome
        return at_version(reading.outcome, merge_chunks=merge_chunks)

    async def _ordered(self, item: Item) -> Any:
        """One command of a read's round, awaited before the next is sent: a round's
        commands must run in order (a page, then the check that follows it)."""
        if isinstance(item, Call):
            return await arun(self.client, item)
        return await self.client.execute_command(*item.args)

    async def ping(self) -> bool:
        return bool(await self.client.ping())

"""The reads and deletes of the HTTP API, over an asyncio Redis client."""

from __future__ import annotations

from typing import Any

from threadfold.core.keys import Keyspace
from threadfold.workers import ops
from threadfold.workers.prefix import (
    ATTEMPTS,
    PAGE,
    Moved,
    NotReplayable,
    PrefixRead,
    deleted_since,
    moving,
)
from threadfold.workers.redis_io import AsyncClient, Call, Item, arun
from threadfold.workers.replay import state_of
from threadfold.workers.storage.meta import VERSION_FIELDS, version_of


class AsyncStore:
    """Thread reads for the API: consistent pages, status, deletion, readiness."""

    def __init__(self, client: AsyncClient, keyspace: Keyspace) -> None:
        self.client = client
        self.keyspace = keyspace

    async def read_state(
        self, ref: str, mode: str = "all", anchor: str = "", limit: int = -1
    ) -> ops.StatePage | None:
        call = ops.read_state_call(self.keyspace, ref, mode, anchor, limit)
        return ops.parse_read_state(await arun(self.client, call), mode, limit)

    async def read_state_bodies(
        self, ref: str, mode: str = "all", anchor: str = "", limit: int = -1
    ) -> ops.StateBodies | None:
        """:meth:`read_state` without decoding the messages."""
        call = ops.read_state_call(self.keyspace, ref, mode, anchor, limit)
        return ops.parse_read_state_bodies(await arun(self.client, call), mode, limit)

    async def version(self, ref: str) -> str | None:
        """The thread's version (cursor), or None when it was never written."""
        meta = self.keyspace.thread(ref).meta
        return version_of(await self.client.hmget(meta, [*VERSION_FIELDS]))

    async def status(self, ref: str) -> ops.ThreadStatus | None:
        return ops.parse_status(await arun(self.client, ops.status_call(self.keyspace, ref)))

    async def delete(self, ref: str) -> bool:
        return bool(int(await arun(self.client, ops.delete_call(self.keyspace, ref))))

    async def travel(self, ref: str, upto: str, *, merge_chunks: bool) -> ops.StatePage:
        """The thread as of version ``upto`` (time travel): the live state with the log
        entries after it folded on when ``upto`` is at or after the cursor, else the log
        replayed from its first entry; read consistently (:mod:`threadfold.workers.prefix`), a read
        overtaken by a trim or a delete read again. :class:`NotReplayable` says why
        there is no such state (trimmed, never written, deleted, before birth, poison,
        moving)."""
        tries = 1
        while True:
            read = PrefixRead(self.keyspace, ref, "travel", upto, first_page=PAGE)
            try:
                while read.result is None:
                    read.feed([await self._ordered(item) for item in read.calls()])
            except Moved as exc:
                if tries >= ATTEMPTS:
                    raise moving(ref, tries, exc) from exc
                tries += 1
                continue
            except NotReplayable as exc:
                raise deleted_since(exc, tries) from None
            found = read.result
            messages = state_of(found, merge_chunks=merge_chunks)
            return ops.StatePage(found.version, len(messages), False, True, messages)

    async def _ordered(self, item: Item) -> Any:
        """One command of a read's round, awaited before the next is sent: a round's
        commands must run in order (a page, then the check that follows it)."""
        if isinstance(item, Call):
            return await arun(self.client, item)
        return await self.client.execute_command(*item.args)

    async def ping(self) -> bool:
        return bool(await self.client.ping())

"""The reads and deletes of the HTTP API, over an asyncio Redis client."""

from __future__ import annotations

from core.codec import decode_messages
from core.fold import replay_fold
from core.keys import Keyspace
from core.messages import BaseMessage
from workers import ops
from workers.redis_io import AsyncClient, arun

PAGE = 1000


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
        k = self.keyspace.thread(ref)
        cursor, enqueued = await self.client.hmget(k.meta, ["c", "e"])
        if cursor is None and enqueued is None:
            return None
        return ops.text(cursor) if cursor is not None else "0-0"

    async def status(self, ref: str) -> ops.ThreadStatus | None:
        return ops.parse_status(await arun(self.client, ops.status_call(self.keyspace, ref)))

    async def delete(self, ref: str) -> bool:
        return bool(int(await arun(self.client, ops.delete_call(self.keyspace, ref))))

    async def replay(self, ref: str, upto: str, *, merge_chunks: bool) -> ops.StatePage | None:
        """The thread as of version ``upto``, replayed from its log (time travel).

        None when the thread was never written; :class:`LookupError` when its log no
        longer holds the whole history.
        """
        k = self.keyspace.thread(ref)
        blocker = ops.replay_blocker(ref, await self.client.hmget(k.meta, ["e", "rb"]))
        if blocker is not None:
            if "never been written" in blocker:
                return None
            raise LookupError(blocker)
        batches: list[list[BaseMessage]] = []
        start, last = "-", "0-0"
        while True:
            page = await self.client.xrange(k.log, start, upto, count=PAGE) or []
            for entry_id, fields in page:
                batches.append(decode_messages(ops.log_payload(fields)))
                last = ops.text(entry_id)
            if len(page) < PAGE:
                break
            start = "(" + last
        messages = replay_fold(batches, merge_chunks=merge_chunks).ordered()
        return ops.StatePage(last, len(messages), False, True, messages)

    async def ping(self) -> bool:
        return bool(await self.client.ping())

"""Writes answered only once replicas hold them (``THREADFOLD_DURABILITY=replica``).

Redis replicates asynchronously: a primary that dies right after answering a write
may take it along, and a replica promoted in its place never had it. ``WAIT n ms``
blocks a connection until ``n`` replicas have acknowledged every write that connection
made, or the time is up, and says how many did. So the producer's script calls and
their ``WAIT`` go down one held connection in one round trip; a count short of the
setting raises :class:`~threadfold.core.errors.NotReplicated` (the write is made on
the primary but in doubt across a failover; a retry with the same ``delta_id`` is
answered as the first and waited for again).

Only on one primary (a standalone or Sentinel-managed server): a cluster's write spans
primaries, each needing a wait of its own (refused by the settings). A script the
server does not hold (NOSCRIPT: after a restart or a failover) is sent again by its
source on the same connection, before a second ``WAIT``: a wait on another connection
would count that connection's writes, not these.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, TypeAlias

import hiredis
import redis
import redis.asyncio as aioredis
from redis.exceptions import NoScriptError

from threadfold.core.errors import NotReplicated
from threadfold.workers.redisio.client import (
    AsyncRedis,
    Call,
    Item,
    SyncRedis,
    aread_replies,
    arun,
    pack_calls,
    read_replies,
    run,
    typed,
)

#: The answers of waited writes, and the refusal to raise after using them (if any).
Waited: TypeAlias = "tuple[list[Any], NotReplicated | None]"


@dataclass(frozen=True, slots=True)
class Wait:
    """How many replicas a write waits for, and how long."""

    replicas: int
    timeout_ms: int

    @property
    def packed(self) -> bytes:
        pack: Any = hiredis.pack_command  # (its stub takes one-item tuples only)
        return bytes(pack(("WAIT", self.replicas, self.timeout_ms)))

    def checked(self, calls: Sequence[Item], replies: list[Any]) -> Waited:
        """The calls' replies, and what to raise once the caller is done with them when
        too few replicas confirmed (the last reply, the wait's): the writes are on the
        primary, so a producer still wakes their threads before it raises. A refused call
        is raised at once (nothing of it was written)."""
        *answers, confirmed = replies
        for answer in answers:
            if isinstance(answer, Exception):
                raise typed(answer)
        if isinstance(confirmed, Exception):
            raise typed(confirmed)
        assert len(answers) == len(calls)
        if int(confirmed) >= self.replicas:
            return answers, None
        return answers, NotReplicated(
            f"the write is on the primary, but {int(confirmed)} of {self.replicas} "
            f"replica(s) confirmed it within {self.timeout_ms} ms: it may or may not "
            "survive a failover; retry with the same delta_id (safe)",
            details={"replicas": int(confirmed), "wanted": self.replicas},
        )


def _missing(replies: Sequence[Any]) -> list[int]:
    """The calls (all but the wait) that met NOSCRIPT and did not run."""
    return [i for i, r in enumerate(replies[:-1]) if isinstance(r, NoScriptError)]


def _merge(replies: list[Any], missing: Sequence[int], again: Sequence[Any]) -> None:
    for i, reply in zip(missing, again[:-1], strict=True):
        replies[i] = reply
    replies[-1] = again[-1]  # the later wait covers every write of the connection


def run_waited(client: redis.Redis, calls: Sequence[Item], wait: Wait) -> Waited:
    """:func:`~threadfold.workers.redisio.client.run_many` of writes, then their wait, on
    one connection (never retried: a producer's write is retried by its caller, with
    its ``delta_id``)."""
    if not calls:
        return [], None
    pool = client.connection_pool
    conn: Any = pool.get_connection()
    try:
        conn.send_packed_command([pack_calls(calls, range(len(calls))) + wait.packed])
        replies = read_replies(conn, len(calls) + 1)
        missing = _missing(replies)
        if missing:
            conn.send_packed_command([pack_calls(calls, missing, by_source=True) + wait.packed])
            _merge(replies, missing, read_replies(conn, len(missing) + 1))
    except BaseException:
        conn.disconnect()  # replies may be left unread on it
        raise
    finally:
        pool.release(conn)
    return wait.checked(calls, replies)


def write(client: SyncRedis, call: Call, wait: Wait | None) -> Any:
    """One write call, answered once ``wait`` (if any) is met."""
    if wait is None:
        return run(client, call)
    assert isinstance(client, redis.Redis)  # the settings refuse a cluster
    [answer], short = run_waited(client, [call], wait)
    if short is not None:
        raise short
    return answer


async def awrite(client: AsyncRedis, call: Call, wait: Wait | None) -> Any:
    """The asyncio twin of :func:`write`."""
    if wait is None:
        return await arun(client, call)
    assert isinstance(client, aioredis.Redis)  # the settings refuse a cluster
    [answer], short = await arun_waited(client, [call], wait)
    if short is not None:
        raise short
    return answer


async def arun_waited(client: aioredis.Redis, calls: Sequence[Item], wait: Wait) -> Waited:
    """The asyncio twin of :func:`run_waited`."""
    if not calls:
        return [], None
    pool: Any = client.connection_pool
    conn: Any = await pool.get_connection()
    try:
        await conn.send_packed_command([pack_calls(calls, range(len(calls))) + wait.packed])
        replies = await aread_replies(conn, len(calls) + 1)
        missing = _missing(replies)
        if missing:
            packed = pack_calls(calls, missing, by_source=True) + wait.packed
            await conn.send_packed_command([packed])
            _merge(replies, missing, await aread_replies(conn, len(missing) + 1))
    except BaseException:
        await conn.disconnect()
        raise
    finally:
        await pool.release(conn)
    return wait.checked(calls, replies)

"""A tenant's threads, most recently active first (``GET /threads``): two exchanges.

First every bucket's candidates (:mod:`threadfold.workers.storage.threads_recent`, one
call per bucket: pipelined in one round trip, or on a cluster each sent straight to its
slot's node, :data:`CLUSTER_WAVE` at a time), merged into the ``limit`` latest; then
those threads' status (:mod:`threadfold.workers.storage.status`), each read at once.
A thread deleted between the two is left out; one written between them shows with its
newer row.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Final

from redis.asyncio.cluster import RedisCluster as AsyncRedisCluster

from threadfold.core.keys import Keyspace
from threadfold.workers.redisio.client import AsyncClient, Call, SyncClient, arun_many, run_many
from threadfold.workers.storage import status, threads_recent
from threadfold.workers.storage.status import ThreadStatus

#: Calls in flight at once on a cluster, where each is a request of its own: redis-py's
#: cluster client holds at most 100 connections per node and refuses a request above
#: them (1,024 buckets at once were refused), and the API's other requests share them.
CLUSTER_WAVE: Final = 50


Row = tuple[str, ThreadStatus, int]


def _candidates(keyspace: Keyspace, tenant: str, limit: int) -> list[Call]:
    return [
        threads_recent.call(keyspace, bucket, tenant, limit) for bucket in range(keyspace.buckets)
    ]


def _rows(latest: Sequence[tuple[str, int]], answers: Sequence[Any]) -> list[Row]:
    found = []
    for (ref, activity), raw in zip(latest, answers, strict=True):
        row = status.parse(raw)
        if row is not None:  # deleted between the two exchanges
            found.append((ref, row, activity))
    return found


def threads_of(client: SyncClient, keyspace: Keyspace, tenant: str, limit: int) -> list[Row]:
    """``tenant``'s ``limit`` most recently active threads, latest first: each ref with
    its status and its activity time (ms of its last commit or append, the later)."""
    if limit <= 0:
        return []
    latest = threads_recent.parse(run_many(client, _candidates(keyspace, tenant, limit)), limit)
    calls = [status.call(keyspace.thread(ref)) for ref, _ in latest]
    return _rows(latest, run_many(client, calls))


async def recent_threads(
    client: AsyncClient, keyspace: Keyspace, tenant: str, limit: int
) -> list[Row]:
    """:func:`threads_of` for asyncio callers."""
    if limit <= 0:
        return []
    latest = threads_recent.parse(await _run(client, _candidates(keyspace, tenant, limit)), limit)
    rows = await _run(client, [status.call(keyspace.thread(ref)) for ref, _ in latest])
    return _rows(latest, rows)


async def _run(client: AsyncClient, calls: Sequence[Call]) -> list[Any]:
    if not isinstance(client, AsyncRedisCluster):
        return await arun_many(client, calls)
    answers: list[Any] = []
    for start in range(0, len(calls), CLUSTER_WAVE):
        answers += await arun_many(client, calls[start : start + CLUSTER_WAVE])
    return answers

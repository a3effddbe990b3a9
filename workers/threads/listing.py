"""A tenant's threads: most recently active first (``GET /threads``), found by a
search, counted, pruned. Each is one call per bucket, pipelined in one round trip (or
on a cluster each sent straight to its slot's node, :data:`CLUSTER_WAVE` at a time),
then the found threads' status.

The list is two exchanges.
First every bucket's candidates (:mod:`threadfold.workers.storage.threads_recent`, one
call per bucket: pipelined in one round trip, or on a cluster each sent straight to its
slot's node, :data:`CLUSTER_WAVE` at a time), merged into the ``limit`` latest; then
those threads' status (:mod:`threadfold.workers.storage.status`), each read at once.
A thread deleted between the two is left out; one written between them shows with its
newer row.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Final

from redis.asyncio.cluster import RedisCluster as AsyncRedisCluster

from threadfold.core.keys import Keyspace
from threadfold.core.results import ThreadRow
from threadfold.workers.redisio.client import (
    AsyncRedis,
    Call,
    SyncRedis,
    arun_many,
    run_many,
    text,
)
from threadfold.workers.storage import prune, search, status, threads_recent
from threadfold.workers.threads import lifecycle
from threadfold.workers.threads.lifecycle import Prune, Search

#: Calls in flight at once on a cluster, where each is a request of its own: redis-py's
#: cluster client holds at most 100 connections per node and refuses a request above
#: them (1,024 buckets at once were refused), and the API's other requests share them.
CLUSTER_WAVE: Final = 50




def _candidates(keyspace: Keyspace, tenant: str, limit: int) -> list[Call]:
    return [
        threads_recent.call(keyspace, bucket, tenant, limit) for bucket in range(keyspace.buckets)
    ]


def _rows(latest: Sequence[tuple[str, int]], answers: Sequence[Any]) -> list[ThreadRow]:
    found = []
    for (ref, activity), raw in zip(latest, answers, strict=True):
        row = status.row(raw, ref, activity)
        if row is not None:  # deleted between the two exchanges
            found.append(row)
    return found


def _statuses(keyspace: Keyspace, refs: Sequence[str], ttl_ms: int) -> list[Call]:
    return [status.call(keyspace.thread(ref), ttl_ms) for ref in refs]


def threads_of(
    client: SyncRedis, keyspace: Keyspace, tenant: str, limit: int, ttl_ms: int = 0
) -> list[ThreadRow]:
    """``tenant``'s ``limit`` most recently active threads, latest first: each one's row
    (its status and its activity time: ms of its last commit or append, the later)."""
    if limit <= 0:
        return []
    latest = threads_recent.parse(run_many(client, _candidates(keyspace, tenant, limit)), limit)
    calls = _statuses(keyspace, [ref for ref, _ in latest], ttl_ms)
    return _rows(latest, run_many(client, calls))


async def recent_threads(
    client: AsyncRedis, keyspace: Keyspace, tenant: str, limit: int, ttl_ms: int = 0
) -> list[ThreadRow]:
    """:func:`threads_of` for asyncio callers."""
    if limit <= 0:
        return []
    latest = threads_recent.parse(await _run(client, _candidates(keyspace, tenant, limit)), limit)
    rows = await _run(client, _statuses(keyspace, [ref for ref, _ in latest], ttl_ms))
    return _rows(latest, rows)


async def _run(client: AsyncRedis, calls: Sequence[Call]) -> list[Any]:
    if not isinstance(client, AsyncRedisCluster):
        return await arun_many(client, calls)
    answers: list[Any] = []
    for start in range(0, len(calls), CLUSTER_WAVE):
        answers += await arun_many(client, calls[start : start + CLUSTER_WAVE])
    return answers


# -- search, count, prune ----------------------------------------------------------------

def search_threads(
    client: SyncRedis, keyspace: Keyspace, tenant: str, s: Search, ttl_ms: int = 0
) -> tuple[list[ThreadRow], tuple[int, str] | None]:
    """A page of ``tenant``'s threads ``s`` finds, in its order, and the position the
    next page starts after (None: no more)."""
    page: list[tuple[int, str]] = []
    after = s.after
    for _ in range(lifecycle.ROUNDS):
        parts = [search.parse(raw) for raw in run_many(client, lifecycle.search_calls(
            keyspace, tenant, s, after))]
        found, after = lifecycle.merge(parts, s.limit - len(page))
        page += found
        if len(page) >= s.limit or after is None:
            break
    refs = [ref for _, ref in page]
    return _rows(_scored(page), run_many(client, _statuses(keyspace, refs, ttl_ms))), after


async def asearch_threads(
    client: AsyncRedis, keyspace: Keyspace, tenant: str, s: Search, ttl_ms: int = 0
) -> tuple[list[ThreadRow], tuple[int, str] | None]:
    """:func:`search_threads` for asyncio callers."""
    page: list[tuple[int, str]] = []
    after = s.after
    for _ in range(lifecycle.ROUNDS):
        answers = await _run(client, lifecycle.search_calls(keyspace, tenant, s, after))
        found, after = lifecycle.merge([search.parse(raw) for raw in answers], s.limit - len(page))
        page += found
        if len(page) >= s.limit or after is None:
            break
    refs = [ref for _, ref in page]
    return _rows(_scored(page), await _run(client, _statuses(keyspace, refs, ttl_ms))), after


def _scored(page: Sequence[tuple[int, str]]) -> list[tuple[str, int]]:
    return [(ref, score) for score, ref in page]


def count_threads(client: SyncRedis, keyspace: Keyspace, tenant: str, s: Search) -> int:
    return sum(int(n) for n in run_many(client, lifecycle.count_calls(keyspace, tenant, s)))


async def acount_threads(client: AsyncRedis, keyspace: Keyspace, tenant: str, s: Search) -> int:
    return sum(int(n) for n in await _run(client, lifecycle.count_calls(keyspace, tenant, s)))


def prune_threads(
    client: SyncRedis, keyspace: Keyspace, p: Prune, progress: Callable[[int], None] | None = None
) -> int:
    """Prune as ``p`` asks, bucket by bucket (``progress`` is told each bucket done):
    the threads removed (or counted, on a dry run)."""
    removed = 0
    for bucket in range(keyspace.buckets):
        refs = [text(r) for r in client.smembers(keyspace.bucket_keys(bucket).threads)]
        calls = lifecycle.prune_calls(keyspace, bucket, refs, p)
        removed += sum(prune.parse(raw) for raw in run_many(client, calls)) if calls else 0
        if progress is not None:
            progress(1)
    return removed


async def aprune_threads(client: AsyncRedis, keyspace: Keyspace, p: Prune) -> int:
    """:func:`prune_threads` for asyncio callers."""
    removed = 0
    for bucket in range(keyspace.buckets):
        members = await client.smembers(keyspace.bucket_keys(bucket).threads)
        calls = lifecycle.prune_calls(keyspace, bucket, [text(r) for r in members], p)
        removed += sum(prune.parse(raw) for raw in await _run(client, calls)) if calls else 0
    return removed

"""A tenant's threads: most recently active first (``GET /threads``), found by a
search, counted, pruned. Each is one call per bucket, pipelined in one round trip (or
on a cluster each sent straight to its slot's node, :data:`CLUSTER_WAVE` at a time),
then the found threads' status.

The list is two exchanges.
First every bucket's candidates (:mod:`threadfold.workers.storage.threads_recent`, one
call per bucket), merged into the ``limit`` latest; then those threads' status
(:mod:`threadfold.workers.storage.status`), each read at once. A thread deleted between
the two is left out; one written between them shows with its newer row.

This asyncio source is the thread service's; ``workers/threads/_sync/listing.py`` is
generated from it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from threadfold.core.keys import Keyspace
from threadfold.core.results import ThreadRow
from threadfold.workers.redisio.client import (
    AsyncRedis,
    Call,
    arun_many,
    is_cluster,
    text,
)
from threadfold.workers.storage import prune, search, status, threads_recent
from threadfold.workers.threads import lifecycle, listing
from threadfold.workers.threads.lifecycle import Prune, Search
from threadfold.workers.threads.listing import CLUSTER_WAVE, rows, scored


def _candidates(keyspace: Keyspace, tenant: str, limit: int) -> list[Call]:
    return [
        threads_recent.call(keyspace, bucket, tenant, limit) for bucket in range(keyspace.buckets)
    ]


def _statuses(keyspace: Keyspace, refs: Sequence[str], ttl_ms: int) -> list[Call]:
    return [status.call(keyspace.thread(ref), ttl_ms) for ref in refs]


async def recent_threads(
    client: AsyncRedis, keyspace: Keyspace, tenant: str, limit: int, ttl_ms: int = 0
) -> list[ThreadRow]:
    """``tenant``'s ``limit`` most recently active threads, latest first: each ref with
    its status and its activity time (ms of its last commit or append, the later)."""
    if limit <= 0:
        return []
    candidates = await fan_out(client, _candidates(keyspace, tenant, limit))
    latest = threads_recent.parse(candidates, limit)
    found = await fan_out(client, _statuses(keyspace, [ref for ref, _ in latest], ttl_ms))
    return rows(latest, found)


async def fan_out(client: AsyncRedis, calls: Sequence[Call]) -> list[Any]:
    """Calls of many buckets pipelined (a cluster's in waves: its client runs a
    pipeline's calls at once, one connection each, and the pool is smaller)."""
    if not is_cluster(client):
        return await arun_many(client, calls)
    answers: list[Any] = []
    for start in range(0, len(calls), CLUSTER_WAVE):
        answers += await arun_many(client, calls[start : start + CLUSTER_WAVE])
    return answers


async def search_threads(
    client: AsyncRedis, keyspace: Keyspace, tenant: str, s: Search, ttl_ms: int = 0
) -> tuple[list[ThreadRow], tuple[int, str] | None]:
    """A page of ``tenant``'s threads ``s`` finds, in its order, and the position the
    next page starts after (None: no more)."""
    page: list[tuple[int, str]] = []
    after = s.after
    for _ in range(lifecycle.ROUNDS):
        answers = await fan_out(client, listing.search_calls(keyspace, tenant, s, after))
        found, after = listing.merge([search.parse(raw) for raw in answers], s.limit - len(page))
        page += found
        if len(page) >= s.limit or after is None:
            break
    refs = [ref for _, ref in page]
    return rows(scored(page), await fan_out(client, _statuses(keyspace, refs, ttl_ms))), after


async def count_threads(client: AsyncRedis, keyspace: Keyspace, tenant: str, s: Search) -> int:
    return sum(int(n) for n in await fan_out(client, listing.count_calls(keyspace, tenant, s)))


async def prune_threads(
    client: AsyncRedis,
    keyspace: Keyspace,
    p: Prune,
    progress: Callable[[int], None] | None = None,
) -> int:
    """Prune as ``p`` asks, bucket by bucket (``progress`` is told each bucket done):
    the threads removed (or counted, on a dry run)."""
    removed = 0
    for bucket in range(keyspace.buckets):
        members = await client.smembers(keyspace.bucket_keys(bucket).threads)
        calls = listing.prune_calls(keyspace, bucket, [text(r) for r in members], p)
        removed += sum(prune.parse(raw) for raw in await fan_out(client, calls)) if calls else 0
        if progress is not None:
            progress(1)
    return removed

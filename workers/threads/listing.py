"""What a list of threads is, beside the exchanges that find it
(``workers/threads/_async/listing.py`` and its generated sync form): a row per thread,
built from the status the second exchange read.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Final

from threadfold.core.keys import Keyspace
from threadfold.core.results import ThreadRow
from threadfold.workers.redisio.client import Call
from threadfold.workers.storage import count, prune, search, status
from threadfold.workers.storage.search import Part
from threadfold.workers.threads.lifecycle import BUDGET, Prune, Search

#: Calls in flight at once on a cluster, where each is a request of its own: redis-py's
#: cluster client holds at most 100 connections per node and refuses a request above
#: them (1,024 buckets at once were refused), and the API's other requests share them.
CLUSTER_WAVE: Final = 50

def rows(latest: Sequence[tuple[str, int]], answers: Sequence[Any]) -> list[ThreadRow]:
    """The found threads' rows, from their status and activity time (one deleted between
    the exchanges is left out)."""
    found = []
    for (ref, activity), raw in zip(latest, answers, strict=True):
        row = status.row(raw, ref, activity)
        if row is not None:
            found.append(row)
    return found


def scored(page: Sequence[tuple[int, str]]) -> list[tuple[str, int]]:
    return [(ref, score) for score, ref in page]


# -- a search, a count, a prune: one call per bucket ---------------------------------------


def search_calls(ks: Keyspace, tenant: str, s: Search, after: tuple[int, str] | None) -> list[Call]:
    return [
        search.call(
            ks,
            bucket,
            tenant,
            s.order,
            metadata=s.metadata,
            status=s.status,
            after=after,
            limit=s.limit,
            budget=BUDGET,
        )
        for bucket in range(ks.buckets)
    ]


def count_calls(ks: Keyspace, tenant: str, s: Search) -> list[Call]:
    return [
        count.call(ks, bucket, tenant, metadata=s.metadata, status=s.status)
        for bucket in range(ks.buckets)
    ]


def merge(
    parts: Sequence[Part], limit: int
) -> tuple[list[tuple[int, str]], tuple[int, str] | None]:
    """The page the buckets' parts settle, latest first, and where the next starts
    (None: nothing is left). A bucket that stopped looking at its frontier may hold
    more past it, so nothing past the least advanced frontier is in this page."""
    found = sorted((item for p in parts for item in p.found), reverse=True)
    frontiers = [p.frontier for p in parts if p.frontier is not None]
    bound = max(frontiers) if frontiers else None
    if bound is not None:
        found = [item for item in found if item >= bound]
    page = found[:limit]
    full = any(len(p.found) >= limit for p in parts)
    if page and (len(found) > limit or full):
        return page, page[-1]
    return page, bound


def prune_calls(ks: Keyspace, bucket: int, refs: Sequence[str], p: Prune) -> list[Call]:
    """The calls that prune ``refs`` (a bucket's threads) as ``p`` asks."""
    wanted = [ref for ref in refs if p.wants(ref)]
    return [
        prune.call(
            ks,
            bucket,
            wanted[i : i + prune.PER_CALL],
            dry_run=p.dry_run,
            idle_ms=p.idle_ms,
            metadata=p.metadata,
        )
        for i in range(0, len(wanted), prune.PER_CALL)
    ]

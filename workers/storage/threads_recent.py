"""THREADS_RECENT (``threads_recent.lua``): one bucket's part of a tenant's threads list,
its most recently active threads; :func:`parse` merges the buckets' parts."""

from __future__ import annotations

import heapq
from collections.abc import Sequence
from typing import Any, Final, NamedTuple

from threadfold.core.keys import Keyspace, ThreadKeys
from threadfold.workers.redisio.client import Call, text
from threadfold.workers.storage.contract import keys_of
from threadfold.workers.storage.lua import script

SCRIPT: Final = script("threads_recent")
#: Most entries of a bucket's dirty and quarantine sets one call looks through for the
#: tenant's threads (the sets hold every tenant's; a bucket rarely holds more than a few
#: with a backlog, but a deep backlog of many threads must not make one call long).
SCAN: Final = 1000


class Keys(NamedTuple):  # the bucket's; active is the tenant's own
    active: str
    dirty: str
    quarantine: str


class Args(NamedTuple):
    limit: int
    scan: int
    tenant_prefix: str
    meta_before: str
    meta_after: str


def call(ks: Keyspace, bucket: int, tenant: str, limit: int) -> Call:
    """One bucket's part of ``tenant``'s list (the candidates' meta keys are built in the
    script from what surrounds the ref in their names here)."""
    probe = ThreadKeys(f"{tenant}/\0", ks.bucket_tag(bucket))
    meta_before, meta_after = probe.meta.split("\0")
    meta_before = meta_before.removesuffix(f"{tenant}/")
    args = Args(limit, SCAN, f"{tenant}/", meta_before, meta_after)
    return Call(SCRIPT, keys_of(Keys, probe), args)


def parse(raws: Sequence[list[Any]], limit: int) -> list[tuple[str, int]]:
    """The buckets' answers as one list: ``(ref, activity ms)``, the ``limit`` latest,
    latest first (ties by ref, so a refresh keeps the order)."""
    found: list[tuple[str, int]] = []
    for raw in raws:
        values = [text(x) for x in raw]
        found += ((values[i], int(values[i + 1])) for i in range(0, len(values), 2))
    return heapq.nsmallest(limit, found, key=lambda row: (-row[1], row[0]))

"""COUNT (``count.lua``): how many of a tenant's threads in one bucket a search would
find (the service adds the buckets' counts)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final, NamedTuple

from threadfold.core.keys import Keyspace
from threadfold.core.lifecycle import StatusName
from threadfold.workers.redisio.client import Call
from threadfold.workers.storage.lua import script
from threadfold.workers.storage.search import terms

SCRIPT: Final = script("count", "common", "lifecycle")


class Keys(NamedTuple):
    active: str
    terms: str
    dirty: str
    quarantine: str


class Args(NamedTuple):
    tag: str
    tenant_prefix: str
    status: str


def call(
    ks: Keyspace,
    bucket: int,
    tenant: str,
    *,
    metadata: Mapping[str, bytes],
    status: StatusName | None,
) -> Call:
    k = ks.bucket_of_tenant(bucket, tenant)
    keys = Keys(k.active, k.terms, k.dirty, k.quarantine)
    args = Args(k.tag, f"{tenant}/", status or "")
    return Call(SCRIPT, keys, [*args, *terms(metadata)])

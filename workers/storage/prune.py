"""PRUNE (``prune.lua``): an operator's removal of some of a bucket's threads, by idle
age and metadata, never a pinned one (the candidates, by tenant and id prefix, are the
caller's: :mod:`threadfold.workers.threads.prune`)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Final, NamedTuple

from threadfold.core.keys import Keyspace
from threadfold.workers.redisio.client import Call
from threadfold.workers.storage import delete
from threadfold.workers.storage.contract import keys_of
from threadfold.workers.storage.lua import script
from threadfold.workers.storage.search import terms

SCRIPT: Final = script("prune", "common", "lifecycle")

#: Most candidates one call checks (a few milliseconds of server time).
PER_CALL: Final = 500


#: A removal's keys: the bucket's sets a removed thread leaves (as DELETE's).
Keys = delete.Keys


class Args(NamedTuple):
    """The call's ARGV before its terms (n_terms {key value}*) and candidates."""

    tag: str
    dry_run: str
    idle_ms: str


def call(
    ks: Keyspace,
    bucket: int,
    refs: Sequence[str],
    *,
    dry_run: bool,
    idle_ms: int | None,
    metadata: Mapping[str, bytes],
) -> Call:
    k = ks.bucket_keys(bucket)
    args = Args(k.tag, "1" if dry_run else "0", "" if idle_ms is None else str(idle_ms))
    return Call(SCRIPT, keys_of(Keys, k), [*args, *terms(metadata), *refs])


def parse(raw: Any) -> int:
    return int(raw)

"""CHECKPOINT_RUNS (``checkpoint_runs.lua``): LangGraph's ``delete_for_runs`` in one
bucket of a tenant, through the bucket's index of runs (the caller fans out over the
buckets)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Final, NamedTuple

from threadfold.core.keys import Keyspace
from threadfold.workers.redisio.client import Call
from threadfold.workers.storage.contract import keys_of
from threadfold.workers.storage.lua import script

SCRIPT: Final = script("checkpoint_runs", "common", "lifecycle", "checkpoint")


class Keys(NamedTuple):
    run_index: str


class Args(NamedTuple):
    tag: str


def call(ks: Keyspace, bucket: int, tenant: str, runs: Sequence[str]) -> Call:
    k = ks.bucket_of_tenant(bucket, tenant)
    return Call(SCRIPT, keys_of(Keys, k), [*Args(k.tag), *runs])


def parse(raw: Any) -> int:
    return int(raw)

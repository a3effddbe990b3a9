"""EXPIRE (``expire.lua``): one bucket's part of a TTL sweep, bounded per call."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Final, NamedTuple

from threadfold.core.keys import Keyspace
from threadfold.workers.redisio.client import Call, text
from threadfold.workers.storage.contract import keys_of
from threadfold.workers.storage.lua import script

SCRIPT: Final = script("expire", "common", "lifecycle")


class Keys(NamedTuple):
    expiry: str
    dirty: str
    quarantine: str
    threads: str


class Args(NamedTuple):
    tag: str
    limit: int
    default_ttl_ms: int


@dataclass(frozen=True, slots=True)
class Expired:
    """A bucket's sweep: the refs removed, and whether more were due than it looked at."""

    removed: list[str]
    more: bool


def call(ks: Keyspace, bucket: int, limit: int, default_ttl_ms: int) -> Call:
    k = ks.bucket_keys(bucket)
    return Call(SCRIPT, keys_of(Keys, k), Args(k.tag, limit, default_ttl_ms))


def parse(raw: list[Any], limit: int) -> Expired:
    return Expired([text(ref) for ref in raw[1:]], int(raw[0]) >= limit)

"""BACKLOG (``backlog.lua``): one bucket's part of the status listing, its threads with a
backlog and its quarantined threads, each with the backlog the same call read."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Final, NamedTuple

from threadfold.core.keys import Keyspace, ThreadKeys
from threadfold.workers.redisio.client import Call, text
from threadfold.workers.storage.contract import keys_of
from threadfold.workers.storage.lua import script

SCRIPT: Final = script("backlog")


class Keys(NamedTuple):  # the bucket's
    dirty: str
    quarantine: str


class Args(NamedTuple):
    limit: int
    meta_before: str
    meta_after: str
    log_before: str
    log_after: str


@dataclass(frozen=True, slots=True)
class Listed:
    """A thread in the status listing, with its backlog and version as one read saw
    them together with its listing (``reason`` and ``entry`` for a quarantined one)."""

    ref: str
    since_ms: int
    backlog: int
    version: str
    reason: str = ""
    entry: str = ""


@dataclass(frozen=True, slots=True)
class Listing:
    """Threads with a backlog and quarantined threads: how many, and the oldest of each."""

    with_backlog: int
    backlog: list[Listed]
    quarantined: int
    quarantine: list[Listed]


def call(ks: Keyspace, bucket: int, limit: int) -> Call:
    """One bucket's part of the listing (its threads' keys are built in the script from
    what surrounds the ref in their names here)."""
    probe = ThreadKeys("\0", ks.bucket_tag(bucket))
    meta_before, meta_after = probe.meta.split("\0")
    log_before, log_after = probe.log.split("\0")
    args = Args(limit, meta_before, meta_after, log_before, log_after)
    return Call(SCRIPT, keys_of(Keys, ks.bucket_keys(bucket)), args)


def parse(raws: Sequence[list[Any]], limit: int) -> Listing:
    """The buckets' answers as one listing, oldest first."""
    with_backlog, quarantined = 0, 0
    backlog: list[Listed] = []
    quarantine: list[Listed] = []
    for n_dirty, dirty, n_quarantined, held in raws:
        with_backlog += int(n_dirty)
        quarantined += int(n_quarantined)
        backlog += (_listed(row) for row in dirty)
        quarantine += (_listed(row) for row in held)
    backlog.sort(key=_since)
    quarantine.sort(key=_since)
    return Listing(with_backlog, backlog[:limit], quarantined, quarantine[:limit])


def _listed(row: list[Any]) -> Listed:
    ref, since, backlog, version, *extra = (text(x) for x in row)
    return Listed(ref, int(float(since)), int(backlog), version, *extra)


def _since(listed: Listed) -> int:
    return listed.since_ms

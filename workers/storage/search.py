"""SEARCH (``search.lua``): one bucket's part of a search of a tenant's threads by
metadata and status. The service merges the buckets' parts
(:mod:`threadfold.workers.threads.search`)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final, NamedTuple

from threadfold.core.keys import Keyspace
from threadfold.core.lifecycle import Order, StatusName
from threadfold.workers.redisio.client import Call, text
from threadfold.workers.storage.lua import script

SCRIPT: Final = script("search", "common", "lifecycle")

#: What a search is sorted by: last activity (a commit, or the creation), or creation.
#: A thread's status: idle (nothing to apply), busy (a backlog), quarantined.


class Keys(NamedTuple):
    order: str
    terms: str
    dirty: str
    quarantine: str


class Args(NamedTuple):
    """SEARCH's ARGV before its terms (n_terms {key value}*)."""

    tag: str
    limit: int
    budget: int
    after_score: str
    after_ref: str
    status: str


@dataclass(frozen=True, slots=True)
class Part:
    """A bucket's matches, latest first (score, ref), and where it stopped looking
    (None when it looked at all of its threads past the cursor)."""

    found: list[tuple[int, str]]
    frontier: tuple[int, str] | None


def terms(metadata: Mapping[str, bytes]) -> list[str | bytes]:
    out: list[str | bytes] = []
    for key, value in metadata.items():
        out += [key, value]
    return [str(len(metadata)), *out]


def call(  # noqa: PLR0913  # one bucket's part of a search: its terms, page and cursor
    ks: Keyspace,
    bucket: int,
    tenant: str,
    order: Order,
    *,
    metadata: Mapping[str, bytes],
    status: StatusName | None,
    after: tuple[int, str] | None,
    limit: int,
    budget: int,
) -> Call:
    k = ks.bucket_of_tenant(bucket, tenant)
    keys = Keys(k.active if order == "activity" else k.born, k.terms, k.dirty, k.quarantine)
    score, ref = (str(after[0]), after[1]) if after is not None else ("", "")
    args = Args(k.tag, limit, budget, score, ref, status or "")
    return Call(SCRIPT, keys, [*args, *terms(metadata)])


def parse(raw: list[Any]) -> Part:
    fs, fr = text(raw[0]), text(raw[1])
    found = [(int(text(raw[i])), text(raw[i + 1])) for i in range(2, len(raw), 2)]
    return Part(found, (int(fs), fr) if fs else None)

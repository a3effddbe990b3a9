"""CANDIDATES (``candidates.lua``): the second step of reading a batch. If the fence is
still the one read with the entries, count the read as an attempt and give the
candidate positions of the fingerprints the entries list, with the pages holding them
(the worker confirms each against its record's id)."""

from __future__ import annotations

from functools import lru_cache
from typing import Any, Final, NamedTuple

from threadfold.core.keys import Keyspace
from threadfold.workers.redisio.client import Call, as_bytes
from threadfold.workers.storage.contract import keys_of
from threadfold.workers.storage.lua import script

SCRIPT: Final = script("candidates", "common", "state")

#: Calls of many threads merge into one (``run_merged``): per thread.
PER_THREAD: Final = True


class Keys(NamedTuple):
    meta: str
    pages: str
    index: str  # type: ignore[assignment]  # the key, as ThreadKeys names it (tuple.index unused)


class Args(NamedTuple):
    fence: str  # the fence the worker read with the entries
    fingerprints: bytes  # 4 bytes each, distinct; b'' for none


class Candidates(NamedTuple):
    """The attempts counted so far, the thread's positions per page, and (when the
    entries listed their fingerprints) candidate positions by fingerprint and the
    stored pages holding them."""

    attempts: int
    per: int
    positions: dict[bytes, list[int]] | None
    pages: dict[int, bytes]


# Key names per thread, memoized: a drain round asks for the same threads again and again.
@lru_cache(maxsize=65_536)
def _keys(ks: Keyspace, ref: str) -> Keys:
    return keys_of(Keys, ks.thread(ref))


def call(ks: Keyspace, ref: str, fence: str, mentioned: bytes | None) -> Call:
    return Call(SCRIPT, _keys(ks, ref), (fence, mentioned or b""))


def parse(raw: list[Any], listed: bool) -> Candidates | None:
    """One thread's section of the answer; None when the fence moved since the read
    (a commit, a rebuild, a delete: the worker reads again). ``listed``: whether the
    entries listed their fingerprints (else no positions: the worker looks ids up)."""
    if int(raw[0]) < 0:
        return None
    attempts, per, c = int(raw[0]), int(raw[1]), int(raw[2])
    if not listed:
        return Candidates(attempts, per, None, {})
    positions: dict[bytes, list[int]] = {}
    end = 3 + 2 * c
    for i in range(3, end, 2):
        positions.setdefault(as_bytes(raw[i]), []).append(int(raw[i + 1]))
    pages = {int(raw[i]): as_bytes(raw[i + 1]) for i in range(end, len(raw), 2)}
    return Candidates(attempts, per, positions, pages)

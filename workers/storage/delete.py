"""DELETE (``delete.lua``): every key of a thread, and its place in its bucket's sets."""

from __future__ import annotations

from typing import Any, Final, NamedTuple

from threadfold.core.keys import ThreadKeys
from threadfold.workers.redisio.client import Call
from threadfold.workers.storage.contract import keys_of
from threadfold.workers.storage.lua import script

SCRIPT: Final = script("delete")


class Keys(NamedTuple):
    log: str
    meta: str
    pages: str
    index: str  # type: ignore[assignment]  # the key, as ThreadKeys names it (tuple.index unused)
    sched: str
    dedupe: str
    dedupe_expiry: str
    dirty: str
    quarantine: str
    threads: str
    feed: str
    active: str


class Args(NamedTuple):
    ref: str


def call(k: ThreadKeys) -> Call:
    return Call(SCRIPT, keys_of(Keys, k), Args(k.ref))


def parse(raw: Any) -> bool:
    """Whether the thread existed."""
    return bool(int(raw))

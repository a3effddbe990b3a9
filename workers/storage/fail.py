"""FAIL (``fail.lua``): count a failed drain; at the limit, quarantine the thread."""

from __future__ import annotations

from typing import Any, Final, NamedTuple

from threadfold.core.keys import ThreadKeys
from threadfold.workers.redisio.client import Call
from threadfold.workers.storage.contract import keys_of
from threadfold.workers.storage.lua import script

SCRIPT: Final = script("fail", "common")


class Keys(NamedTuple):
    meta: str
    sched: str
    dirty: str
    quarantine: str


class Args(NamedTuple):
    limit: int
    reason: str
    entry: str
    ref: str
    backoff_ms: int
    #: The failed batch's fence: a failure of a state that has since moved is dropped.
    fence: str


def call(k: ThreadKeys, args: Args) -> Call:
    return Call(SCRIPT, keys_of(Keys, k), args)


def parse(raw: Any) -> bool:
    """True when the thread is now quarantined."""
    return bool(int(raw))

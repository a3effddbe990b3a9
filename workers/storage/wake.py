"""WAKE (``wake.lua``): the sweeper's check of a thread with a backlog and no wake-up."""

from __future__ import annotations

from typing import Any, Final, NamedTuple

from threadfold.core.keys import ThreadKeys
from threadfold.workers.redisio.client import Call
from threadfold.workers.storage.contract import keys_of
from threadfold.workers.storage.lua import script

SCRIPT: Final = script("wake", "common")


class Keys(NamedTuple):
    meta: str
    log: str
    sched: str
    dirty: str


class Args(NamedTuple):
    ref: str
    sched_ms: int


def call(k: ThreadKeys, wake_ms: int) -> Call:
    return Call(SCRIPT, keys_of(Keys, k), Args(k.ref, wake_ms))


def parse(raw: Any) -> bool:
    """True when the caller must send the wake-up (this call set the flag)."""
    return bool(int(raw))

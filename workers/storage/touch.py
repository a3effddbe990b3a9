"""TOUCH (``touch.lua``): a read restarts the thread's TTL, when the deployment asks
reads to (``THREADFOLD_TTL_REFRESH_ON_READ``)."""

from __future__ import annotations

from typing import Final, NamedTuple

from threadfold.core.keys import ThreadKeys
from threadfold.workers.redisio.client import Call
from threadfold.workers.storage.contract import keys_of
from threadfold.workers.storage.lua import script

SCRIPT: Final = script("touch", "common", "lifecycle")


class Keys(NamedTuple):
    meta: str
    expiry: str


class Args(NamedTuple):
    ref: str
    default_ttl_ms: int


def call(k: ThreadKeys, default_ttl_ms: int) -> Call:
    return Call(SCRIPT, keys_of(Keys, k), Args(k.ref, default_ttl_ms))

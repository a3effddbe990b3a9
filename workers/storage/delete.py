"""DELETE (``delete.lua``): every key of a thread, and its place in its bucket's sets
(the removal a delete, the TTL sweep and a prune share: ``forget`` in
``lifecycle.lua``)."""

from __future__ import annotations

from typing import Any, Final, NamedTuple

from threadfold.core.keys import ThreadKeys
from threadfold.workers.redisio.client import Call
from threadfold.workers.storage.contract import keys_of
from threadfold.workers.storage.feed_record import Removal
from threadfold.workers.storage.lua import script

SCRIPT: Final = script("delete", "common", "lifecycle")



class Keys(NamedTuple):
    dirty: str
    quarantine: str
    threads: str
    expiry: str


class Args(NamedTuple):
    tag: str
    ref: str
    reason: str


def call(k: ThreadKeys, reason: Removal = "deleted") -> Call:
    return Call(SCRIPT, keys_of(Keys, k), Args(k.tag, k.ref, reason))


def parse(raw: Any) -> bool:
    """Whether the thread existed."""
    return bool(int(raw))

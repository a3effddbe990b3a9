"""HEAD (``head.lua``): the first step of reading batches, the meta fields a read needs
of many threads in one call (the log entries come with it in one plain XREAD)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final, NamedTuple

from threadfold.workers.redisio.client import Call
from threadfold.workers.storage import meta
from threadfold.workers.storage.lua import script

SCRIPT: Final = script("head")

#: Per thread.
PER_THREAD: Final = True


class Keys(NamedTuple):
    meta: str


#: What each thread's answer lists, in order (None where unset).
FIELDS: Final = (meta.CURSOR, meta.GENERATION, meta.INCARNATION, meta.NEXT_POSITION,
                 meta.QUARANTINE)


def call(metas: Sequence[str]) -> Call:
    """One call for the threads of these meta keys (their answers in this order)."""
    return Call(SCRIPT, metas, ())

"""CURSORS (``cursors.lua``): many threads' cursors in one call (a latency probe's poll:
far less client CPU than a pipeline of one HGET per thread)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final, NamedTuple

from threadfold.workers.redisio.client import Call
from threadfold.workers.storage.lua import script

SCRIPT: Final = script("cursors")

#: Per thread.
PER_THREAD: Final = True


class Keys(NamedTuple):
    meta: str


def call(metas: Sequence[str]) -> Call:
    """On a standalone server (the keys may span slots). The answer is each thread's
    cursor as Redis sends it, '' where unset: a poll compares them raw, parsing only
    those that moved."""
    return Call(SCRIPT, metas, ())


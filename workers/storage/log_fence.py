"""LOG_FENCE (``log_fence.lua``): after a page of a prefix read, whether the thread is
the incarnation the read began with, and where its log starts now."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Final, NamedTuple

from threadfold.core.keys import ThreadKeys
from threadfold.workers.redisio.client import Call, text
from threadfold.workers.storage.contract import keys_of
from threadfold.workers.storage.lua import script

SCRIPT: Final = script("log_fence")


class Keys(NamedTuple):
    meta: str
    log: str


class LogFence(NamedTuple):
    exists: bool
    incarnation: str  # '' where unset
    first: str  # the log's first entry id, '' for an empty log


def call(k: ThreadKeys) -> Call:
    return Call(SCRIPT, keys_of(Keys, k), ())


def parse(raw: Sequence[Any]) -> LogFence:
    return LogFence(bool(int(raw[0])), text(raw[1]), text(raw[2]))

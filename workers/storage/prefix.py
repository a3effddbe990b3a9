"""PREFIX (``prefix.lua``): one instant of a thread to read a prefix of its log from
(time travel, audit and rebuild: :mod:`threadfold.workers.replay.prefix` reads the rest in
pages, each checked by LOG_FENCE)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Final, NamedTuple

from threadfold.core.keys import ThreadKeys
from threadfold.workers.redisio.client import Call, text
from threadfold.workers.storage.contract import keys_of
from threadfold.workers.storage.lua import script

SCRIPT: Final = script("prefix", "common")


class Keys(NamedTuple):
    meta: str
    pages: str
    log: str


class Args(NamedTuple):
    mode: str  # 'travel' | 'audit' | 'replay'
    upto: str
    entries: int  # log entries to return with it (0 for none)


class Missing(NamedTuple):
    """The thread does not exist (never written, or deleted)."""


class Unborn(NamedTuple):
    """``upto`` precedes the first entry of the thread's current incarnation."""

    birth: str


class Trimmed(NamedTuple):
    """``upto`` is before the cursor and the log no longer holds the whole history."""

    cursor: str


class Instant(NamedTuple):
    """The thread at one instant: its fence's parts ('' where unset), the log's first
    entry, the first entries asked for (as XRANGE gives them) and, when read, the live
    state's pages (``{number, page}*``). ``live``: a travel at or after the cursor."""

    live: bool
    cursor: str
    generation: str
    incarnation: str
    first: str
    entries: Sequence[Any]
    pages: Sequence[Any]


Answer = Missing | Unborn | Trimmed | Instant


def call(k: ThreadKeys, args: Args) -> Call:
    return Call(SCRIPT, keys_of(Keys, k), args)


def parse(raw: Sequence[Any]) -> Answer:
    status = text(raw[0])
    if status == "missing":
        return Missing()
    if status == "unborn":
        return Unborn(text(raw[1]))
    if status == "gone":
        return Trimmed(text(raw[1]))
    c, g, i, first = (text(x) for x in raw[1:5])
    return Instant(status == "live", c, g, i, first, raw[6], raw[7])

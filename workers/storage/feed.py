"""FEED (``feed.lua``): a follower's resume, the change events after the version it
holds when the thread's feed still reaches back to it."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Final, Literal, NamedTuple

from threadfold.core.keys import ThreadKeys
from threadfold.workers.redisio.client import Call, as_bytes, text
from threadfold.workers.storage.contract import keys_of
from threadfold.workers.storage.feed_record import FeedEvent, decode
from threadfold.workers.storage.lua import script

SCRIPT: Final = script("feed")

#: Events one call returns at most; a follower further behind calls again from the last.
PAGE: Final = 1000

Kind = Literal["absent", "current", "gap", "events"]


class Keys(NamedTuple):
    meta: str
    feed: str


class Args(NamedTuple):
    after: str
    count: int  # type: ignore[assignment]  # ARGV[2] (tuple.count unused)


@dataclass(frozen=True, slots=True)
class FeedRead:
    """What the feed holds after a version: ``kind`` says whether it can be resumed
    (``events``, ``current``) or the follower needs a snapshot (``gap``, ``absent``)."""

    kind: Kind
    cursor: str = "0-0"
    events: list[FeedEvent] = field(default_factory=list)


def call(k: ThreadKeys, after: str, count: int = PAGE) -> Call:
    return Call(SCRIPT, keys_of(Keys, k), Args(after, count))


def parse(raw: list[Any]) -> FeedRead:
    kind = text(raw[0])
    if kind == "absent":
        return FeedRead("absent")
    cursor = text(raw[1])
    if kind != "events":
        return FeedRead("gap" if kind == "gap" else "current", cursor)
    events = []
    for i in range(2, len(raw), 3):
        event = decode(as_bytes(raw[i + 2]))
        if event is not None:
            events.append(event)
    return FeedRead("events", cursor, events)

"""STATUS (``status.lua``): what ``status`` reports about one thread (and the threads
list, ``GET /threads``, shows of each)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Final, NamedTuple

import msgspec

from threadfold.core.keys import ThreadKeys
from threadfold.core.versions import parse_version
from threadfold.workers.redisio.client import Call, text
from threadfold.workers.storage.contract import keys_of
from threadfold.workers.storage.lua import script

SCRIPT: Final = script("status", "common")


class Keys(NamedTuple):
    meta: str
    log: str
    dirty: str


class Args(NamedTuple):
    ref: str


class SkippedEntry(msgspec.Struct, frozen=True):
    """A log entry ``retry --skip`` removed: its id, why the drain failed on it, when."""

    entry: str
    reason: str
    at_ms: int


@dataclass(frozen=True, slots=True)
class ThreadStatus:
    """What ``status`` reports about one thread."""

    version: str
    last_enqueued: str
    backlog: int
    messages: int
    last_commit_ms: int | None
    attempts: int
    quarantined: str
    quarantined_entry: str
    dirty_since_ms: int | None
    applied: int
    #: The age of the oldest entry not yet applied, by Redis's clock (None without a
    #: backlog).
    lag_ms: int | None
    #: Entries an operator skipped (``retry --skip``), oldest first: the latest
    #: :data:`threadfold.workers.storage.meta.SKIPPED_KEPT` of them.
    skipped: list[SkippedEntry] = field(default_factory=list)


# The retry script writes the list with Lua's cjson (numbers as %.14g: a ms time is 13
# digits, so it stays an integer).
_SKIPPED: Final = msgspec.json.Decoder(list[SkippedEntry])


def call(k: ThreadKeys) -> Call:
    return Call(SCRIPT, keys_of(Keys, k), Args(k.ref))


def parse(raw: list[Any]) -> ThreadStatus | None:
    """None when the thread was never written (or deleted)."""
    if not raw:
        return None
    c, e, t, a, q, qe, applied, added, count, dirty, skipped, oldest, now = (
        text(x) for x in raw
    )
    return ThreadStatus(
        version=c,
        last_enqueued=e,
        backlog=int(added) - int(applied),
        messages=int(count),
        last_commit_ms=int(t) if t else None,
        attempts=int(a),
        quarantined=q,
        quarantined_entry=qe,
        dirty_since_ms=int(float(dirty)) if dirty else None,
        applied=int(applied),
        lag_ms=max(0, int(now) - parse_version(oldest)[0]) if oldest else None,
        skipped=_SKIPPED.decode(skipped),
    )

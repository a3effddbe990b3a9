"""THREAD_ROW (``thread_row.lua``): one thread's row in the threads list (``GET /threads``),
read at once: version, messages, backlog, the oldest unapplied entry, quarantine."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Final, NamedTuple

from threadfold.core.keys import ThreadKeys
from threadfold.core.versions import parse_version
from threadfold.workers.redis_io import Call, text
from threadfold.workers.storage.contract import keys_of
from threadfold.workers.storage.lua import script

SCRIPT: Final = script("thread_row", "common")


class Keys(NamedTuple):
    meta: str
    log: str


@dataclass(frozen=True, slots=True)
class ThreadRow:
    """A thread as the list shows it; ``lag_ms`` is the age of its oldest unapplied
    entry by Redis's clock (None without a backlog)."""

    ref: str
    version: str
    messages: int
    backlog: int
    lag_ms: int | None
    last_commit_ms: int | None
    quarantined: str
    last_enqueued: str


def call(k: ThreadKeys) -> Call:
    return Call(SCRIPT, keys_of(Keys, k), ())


def parse(ref: str, raw: list[Any]) -> ThreadRow | None:
    """None when the thread is gone (deleted since it was listed)."""
    if not raw:
        return None
    version, messages, backlog, oldest, committed, reason, enqueued, now = (text(x) for x in raw)
    lag = max(0, int(now) - parse_version(oldest)[0]) if oldest else None
    return ThreadRow(
        ref,
        version,
        int(messages),
        int(backlog),
        lag,
        int(committed) if committed else None,
        reason,
        enqueued,
    )

"""STATUS (``status.lua``): what ``status`` reports about one thread (and the threads
list, ``GET /threads``, shows of each)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Final, NamedTuple

import msgspec

from threadfold.core.keys import ThreadKeys
from threadfold.core.versions import parse_version
from threadfold.workers.redisio.client import Call, as_bytes, text
from threadfold.workers.storage.contract import keys_of
from threadfold.workers.storage.lua import script

SCRIPT: Final = script("status", "common", "lifecycle")


class Keys(NamedTuple):
    meta: str
    log: str
    dirty: str
    expiry: str
    metadata: str


class Args(NamedTuple):
    ref: str
    ttl_ms: int


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
    #: When the current incarnation was created (ms), by its first entry's id.
    created_ms: int | None = None
    #: The thread's own TTL (None: the deployment's), whether it is pinned, and when it
    #: expires if it stays idle (None: never).
    ttl_ms: int | None = None
    pinned: bool = False
    expires_ms: int | None = None
    #: Its metadata: key -> value JSON, as stored (threadfold.core.metadata).
    metadata: dict[str, bytes] = field(default_factory=dict)


# The retry script writes the list with Lua's cjson (numbers as %.14g: a ms time is 13
# digits, so it stays an integer).
_SKIPPED: Final = msgspec.json.Decoder(list[SkippedEntry])


def call(k: ThreadKeys, ttl_ms: int = 0) -> Call:
    """``ttl_ms``: the deployment's TTL, what a thread without its own has."""
    return Call(SCRIPT, keys_of(Keys, k), Args(k.ref, ttl_ms))


def parse(raw: list[Any]) -> ThreadStatus | None:
    """None when the thread was never written (or deleted)."""
    if not raw:
        return None
    c, e, t, a, q, qe, applied, added, count, dirty, skipped, oldest, now = (
        text(x) for x in raw[:13]
    )
    birth, own, pinned, expires = (text(x) for x in raw[13:17])
    stored = raw[17]
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
        created_ms=parse_version(birth)[0] if birth else None,
        ttl_ms=int(own) if own else None,
        pinned=bool(pinned),
        expires_ms=int(float(expires)) if expires else None,
        metadata={text(stored[i]): as_bytes(stored[i + 1]) for i in range(0, len(stored), 2)},
    )

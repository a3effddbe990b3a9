"""STATUS (``status.lua``): what ``status`` reports about one thread (and the threads
list, ``GET /threads``, shows of each), parsed straight into the results the service
answers (:mod:`threadfold.core.results`: a :class:`Status`, a :class:`ThreadRow`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Final, NamedTuple

import msgspec

from threadfold.core.keys import ThreadKeys
from threadfold.core.metadata import decoded
from threadfold.core.results import Skipped, Status, ThreadRow
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


@dataclass(frozen=True, slots=True)
class Stored:
    """STATUS's answer about one thread: the thread's :class:`Status` as the service
    answers it, built here, and what only the engine reads besides."""

    status: Status
    #: Log entries applied so far (the drained count; ``backlog`` is the rest).
    applied: int
    #: Its metadata as stored, key -> value JSON (a copy carries it over byte for byte;
    #: ``status.metadata`` holds the values).
    metadata: dict[str, bytes]


# The retry script writes the list with Lua's cjson (numbers as %.14g: a ms time is 13
# digits, so it stays an integer).
_SKIPPED: Final = msgspec.json.Decoder(tuple[Skipped, ...])


def call(k: ThreadKeys, ttl_ms: int = 0) -> Call:
    """``ttl_ms``: the deployment's TTL, what a thread without its own has."""
    return Call(SCRIPT, keys_of(Keys, k), Args(k.ref, ttl_ms))


def _ms(value: str) -> int | None:
    return int(float(value)) if value else None


def _lifetime(raw: list[Any], stored: dict[str, bytes]) -> dict[str, Any]:
    """What a status and a row show of a thread's metadata and lifetime."""
    birth, own, pinned, expires = (text(x) for x in raw[13:17])
    return {
        "metadata": decoded(stored),
        "created_ms": parse_version(birth)[0] if birth else None,
        "ttl_seconds": int(own) / 1000 if own else None,
        "pinned": bool(pinned),
        "expires_at_ms": _ms(expires),
    }


def _stored(raw: list[Any]) -> dict[str, bytes]:
    pairs = raw[17]
    return {text(pairs[i]): as_bytes(pairs[i + 1]) for i in range(0, len(pairs), 2)}


def parse(raw: list[Any], ref: str) -> Stored | None:
    """The status of the thread ``ref``; None when it was never written (or deleted)."""
    if not raw:
        return None
    c, e, t, a, q, qe, applied, added, count, dirty, skipped = (text(x) for x in raw[:11])
    stored = _stored(raw)
    status = Status(
        thread_id=ref.partition("/")[2],
        version=c,
        last_enqueued=e,
        backlog=int(added) - int(applied),
        messages=int(count),
        last_commit_ms=_ms(t),
        attempts=int(a),
        quarantined=bool(q),
        quarantine_reason=q or None,
        quarantined_entry=qe or None,
        dirty_since_ms=_ms(dirty),
        skipped=_SKIPPED.decode(skipped),
        **_lifetime(raw, stored),
    )
    return Stored(status, int(applied), stored)


def row(raw: list[Any], ref: str, activity: int) -> ThreadRow | None:
    """The threads list's row of ``ref`` (``activity``: ms of its last commit or append,
    the later); None when it was deleted. ``lag_ms``: the age of its oldest entry not
    yet applied, by Redis's clock (None without a backlog)."""
    if not raw:
        return None
    c, e, t, _, q, _, applied, added, count = (text(x) for x in raw[:9])
    oldest, now = text(raw[11]), text(raw[12])
    return ThreadRow(
        thread_id=ref.partition("/")[2],  # as stored, unchecked: a list never fails on one row
        version=c,
        messages=int(count),
        backlog=int(added) - int(applied),
        lag_ms=max(0, int(now) - parse_version(oldest)[0]) if oldest else None,
        quarantined=bool(q),
        quarantine_reason=q or None,
        last_commit_ms=_ms(t),
        last_activity_ms=activity,
        last_enqueued=e,
        **_lifetime(raw, _stored(raw)),
    )

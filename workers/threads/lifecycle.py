"""The lifecycle operations' checks and their fan-out over buckets, written once for
both forms of the service: a thread's update (metadata, TTL, pin), search and count by
metadata, prune.

A search asks every bucket for its part (``search.lua``: its matches past the cursor,
latest first, or where a bounded walk stopped) and merges them: what no bucket can
still be hiding is the page, and the cursor is the position after its last thread.
The cursor is opaque to callers and carries the search it belongs to, so a cursor of
another search is refused, not misread.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Final

import msgspec

from threadfold.core import metadata as md
from threadfold.core.errors import BadRequest, InvalidInput
from threadfold.core.ids import MAX_DELTA_ID
from threadfold.core.keys import InvalidName, check_name, make_ref
from threadfold.core.lifecycle import (
    MAX_TTL_SECONDS,
    MIN_TTL_SECONDS,
    TTL_DEFAULT,
    TTL_KEEP,
    Order,
    StatusName,
)
from threadfold.workers.threads.query import version as check_version

#: A search page's ``limit``: its default and its largest.
SEARCH_LIMIT: Final = 20
SEARCH_MAX: Final = 500
#: Threads one bucket looks at per search call when no rare term narrows it: a page's
#: server work is bounded by buckets x this, however many threads there are.
BUDGET: Final = 256
#: Rounds of bucket calls one search makes before it answers a short page with a
#: cursor (a selective filter over many threads).
ROUNDS: Final = 8

ORDERS: Final = ("activity", "created")
STATUSES: Final = ("idle", "busy", "quarantined")
#: An update's argument left out (the clients' signatures and the PATCH body's fields
#: use the same sentinel, so they pass their arguments straight on).
_UNSET: Final = msgspec.UNSET


@dataclass(frozen=True, slots=True)
class Update:
    """A checked update: metadata changes, and the TTL and pin if given."""

    metadata: md.Changes = field(default_factory=dict)
    ttl: str = TTL_KEEP  # TTL_KEEP, TTL_DEFAULT, or ms
    pinned: str = ""  # '', '1', '0'

    @property
    def empty(self) -> bool:
        return not self.metadata and self.ttl == TTL_KEEP and not self.pinned


def ttl_ms_of(value: object, name: str = "ttl_seconds") -> int:
    """A TTL in seconds, as ms (a whole number of seconds within the bounds)."""
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise InvalidInput(f"{name}: expected a number of seconds, got {value!r}", field=name)
    if not MIN_TTL_SECONDS <= value <= MAX_TTL_SECONDS:
        raise InvalidInput(
            f"{name}: expected from {MIN_TTL_SECONDS} to {MAX_TTL_SECONDS} seconds "
            "(null: the deployment's default; pinned: never expire)",
            field=name,
        )
    return int(value * 1000)


def update(
    metadata: object = _UNSET, ttl_seconds: object = _UNSET, pinned: object = _UNSET
) -> Update:
    """The arguments of an update, each checked (unset ones unchanged)."""
    changes: md.Changes = {} if metadata is _UNSET else md.changes(metadata)
    ttl = TTL_KEEP
    if ttl_seconds is None:
        ttl = TTL_DEFAULT
    elif ttl_seconds is not _UNSET:
        ttl = str(ttl_ms_of(ttl_seconds))
    pin = ""
    if pinned is not _UNSET:
        if not isinstance(pinned, bool):
            raise InvalidInput(f"pinned: expected true or false, got {pinned!r}", field="pinned")
        pin = "1" if pinned else "0"
    return Update(changes, ttl, pin)


def refused(limit: str, reached: int) -> InvalidInput:
    """The refusal of metadata past a thread's ``limit`` ('keys' or 'bytes')."""
    if limit == "keys":
        return InvalidInput(
            f"metadata: a thread holds at most {md.MAX_KEYS} keys; this would make "
            f"{reached}",
            field="metadata",
        )
    return InvalidInput(
        f"metadata: a thread holds at most {md.MAX_TOTAL_BYTES} bytes of keys and values; "
        f"this would make {reached}",
        field="metadata",
    )


# -- search ----------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Search:
    """A checked search: exact metadata values, a status, an order, a page."""

    metadata: dict[str, bytes] = field(default_factory=dict)
    status: StatusName | None = None
    order: Order = "activity"
    limit: int = SEARCH_LIMIT
    after: tuple[int, str] | None = None

    @property
    def identity(self) -> list[Any]:
        """What a cursor of this search carries, so that it is not used for another."""
        terms = sorted((k, v.decode()) for k, v in self.metadata.items())
        return [self.order, self.status or "", terms]


def status_name(value: object, name: str = "status") -> StatusName | None:
    if value is None:
        return None
    for known in STATUSES:
        if value == known:
            return known
    raise InvalidInput(f"{name}: expected one of {', '.join(STATUSES)}; got {value!r}", field=name)


def _order(value: object) -> Order:
    for known in ORDERS:
        if value == known:
            return known
    raise InvalidInput(f"sort: expected one of {', '.join(ORDERS)}; got {value!r}", field="sort")


def _limit(value: object) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= SEARCH_MAX:
        raise InvalidInput(
            f"limit: expected an integer from 1 to {SEARCH_MAX}, got {value!r}", field="limit"
        )
    return value


def searched(
    *,
    metadata: object = None,
    status: object = None,
    sort: object = "activity",
    limit: object = SEARCH_LIMIT,
    cursor: object = None,
) -> Search:
    """A search's arguments checked, the cursor against the search it came from."""
    terms = {} if metadata is None else md.filters(metadata)
    found = Search(terms, status_name(status), _order(sort), _limit(limit))
    if cursor is None:
        return found
    return Search(found.metadata, found.status, found.order, found.limit, _after(cursor, found))


def cursor_of(s: Search, at: tuple[int, str]) -> str:
    raw = msgspec.msgpack.encode([1, s.identity, at[0], at[1]])
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def _after(value: object, s: Search) -> tuple[int, str]:
    bad = BadRequest("cursor: not a cursor this search returned", field="cursor")
    if not isinstance(value, str) or not 0 < len(value) <= 1024:
        raise bad
    try:
        raw = base64.urlsafe_b64decode(value + "=" * (-len(value) % 4))
        version, identity, score, ref = msgspec.msgpack.decode(raw)
    except (binascii.Error, ValueError, TypeError, msgspec.DecodeError):
        raise bad from None
    if version != 1 or identity != msgspec.msgpack.decode(msgspec.msgpack.encode(s.identity)):
        raise BadRequest(
            "cursor: from another search (its metadata, status and sort must be the same)",
            field="cursor",
        )
    if not isinstance(score, int) or not isinstance(ref, str):
        raise bad
    return score, ref


# -- prune ------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Prune:
    """What a prune removes: threads of ``tenant`` (None: every tenant's) whose id starts
    with ``prefix``, idle for ``idle_ms`` or more if given, holding every ``metadata``
    value; never a pinned one."""

    tenant: str | None = None
    prefix: str = ""
    metadata: dict[str, bytes] = field(default_factory=dict)
    idle_ms: int | None = None
    dry_run: bool = False

    def wants(self, ref: str) -> bool:
        tenant, _, thread_id = ref.partition("/")
        return (self.tenant is None or tenant == self.tenant) and thread_id.startswith(
            self.prefix
        )


def pruned(
    *,
    tenant: str | None,
    prefix: object = "",
    metadata: object = None,
    idle_seconds: object = None,
    dry_run: object = False,
) -> Prune:
    if tenant is not None:
        check_name(tenant, "tenant")
    if not isinstance(prefix, str) or len(prefix) > 128:
        raise InvalidInput("prefix: expected a string of at most 128 characters", field="prefix")
    terms = {} if metadata is None else md.filters(metadata)
    idle = None
    if idle_seconds is not None:
        if (
            isinstance(idle_seconds, bool)
            or not isinstance(idle_seconds, int | float)
            or not 0 <= idle_seconds <= MAX_TTL_SECONDS
        ):
            raise InvalidInput(
                f"idle_seconds: expected from 0 to {MAX_TTL_SECONDS} seconds", field="idle_seconds"
            )
        idle = int(idle_seconds * 1000)
    if not isinstance(dry_run, bool):
        raise InvalidInput("dry_run: expected true or false", field="dry_run")
    if not prefix and not terms and idle is None and tenant is None:
        raise InvalidInput(
            "prune: give a tenant, a prefix, metadata or idle_seconds (all threads of "
            "every tenant is never one request)",
            field="prefix",
        )
    return Prune(tenant, prefix, terms, idle, dry_run)


# -- copy -------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Copy:
    """A checked copy: the new thread's id and ref, the source's version (None: its
    current one), and the metadata changes laid over the source's."""

    to: str
    to_ref: str
    at_version: str | None
    metadata: md.Changes
    delta_id: str | None = None
    source: str = ""

    @property
    def identity(self) -> str:
        """What a retry of this copy is known by ('' without a delta_id): its source and
        delta_id, digested (hex, one line). The thread the copy makes keeps it, apart
        from its appends' delta_ids, so a copy is never taken for an append nor for a
        copy of another source (``ingest.lua``)."""
        if self.delta_id is None:
            return ""
        given = msgspec.json.encode([self.source, self.delta_id])
        return hashlib.sha256(given).hexdigest()[:32]

    def metadata_of(self, stored: Mapping[str, bytes]) -> list[str | bytes]:
        """The new thread's metadata: the source's with the changes, within the limits."""
        merged = dict(stored)
        for key, value in self.metadata.items():
            if value is None:
                merged.pop(key, None)
            else:
                merged[key] = value
        if len(merged) > md.MAX_KEYS:
            raise refused("keys", len(merged))
        if md.total_bytes(merged) > md.MAX_TOTAL_BYTES:
            raise refused("bytes", md.total_bytes(merged))
        return md.pairs(dict(merged))


def copy_target(source: str, to: object) -> str:
    """A copy's ``to``: a thread id, not the source's (422 naming ``to``)."""
    try:
        name = check_name(to, "to: a thread id")
    except InvalidName as exc:
        raise InvalidInput(str(exc), field="to") from exc
    if name == source:
        raise InvalidInput("to: a thread is not copied onto itself", field="to")
    return name


def copy_of(
    tenant: str,
    source: str,
    to: object,
    *,
    at_version: object = None,
    metadata: object = None,
    delta_id: str | None = None,
) -> Copy:
    """A copy's arguments: ``to`` a new thread id, not the source's."""
    to = copy_target(source, to)
    version = None
    if at_version is not None:
        if not isinstance(at_version, str):
            raise InvalidInput("at_version: expected a version <ms>-<seq>", field="at_version")
        version = check_version(at_version, "at_version")
    changes = {} if metadata is None else md.changes(metadata)
    if delta_id is not None and not (
        isinstance(delta_id, str) and 0 < len(delta_id) <= MAX_DELTA_ID
    ):
        raise InvalidInput(
            f"delta_id: expected a string of 1 to {MAX_DELTA_ID} characters", field="delta_id"
        )
    return Copy(to, make_ref(tenant, to), version, changes, delta_id, source)

"""READ_STATE (``read_state.lua``): a consistent read of a thread's messages, whole or a
page of them around an anchor id, in one call.

A whole thread on one server (not a Cluster) is read without the script, as one
MULTI/EXEC transaction (:func:`transaction`): as consistent (a transaction runs at one
instant), and its pages never become Lua strings, which Redis's Lua hashes byte by
byte: a read of 100 messages cost the server 634k instructions through the script.
:func:`exchange` chooses; either answer has the script's shape."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Final, NamedTuple, TypeVar

import redis
import redis.asyncio as aioredis

from threadfold.core.codec import decode_stored
from threadfold.core.keys import ThreadKeys
from threadfold.core.messages import BaseMessage
from threadfold.workers.redisio.client import (
    AsyncRedis,
    Call,
    Command,
    SyncRedis,
    arun,
    arun_items,
    as_bytes,
    run,
    run_many,
    text,
)
from threadfold.workers.storage.contract import keys_of
from threadfold.workers.storage.lua import script
from threadfold.workers.storage.pages import fingerprint, records, split_records

SCRIPT: Final = script("read_state", "common", "state")

T = TypeVar("T")


class Keys(NamedTuple):
    meta: str
    pages: str
    index: str  # type: ignore[assignment]  # the key, as ThreadKeys names it (tuple.index unused)


class Args(NamedTuple):
    mode: str  # 'all' | 'after' | 'before'
    anchor_id: str
    limit: int  # -1 = all
    anchor_fingerprint: bytes


@dataclass(frozen=True, slots=True)
class StatePage:
    """A consistent read of a thread (one script): messages in order and their version."""

    version: str
    total: int
    has_more: bool
    anchor_found: bool
    messages: list[BaseMessage]


class StateBodies:
    """A :class:`StatePage` with its messages still encoded, as stored.

    A whole thread's read keeps the pages READ_STATE sent, in order (``pages``), and
    splits them into ``ids`` and ``bodies`` only when those are asked for: the HTTP
    API's JSON cache looks whole pages up first (:mod:`threadfold.api.fragments`).
    """

    __slots__ = ("_bodies", "_ids", "anchor_found", "has_more", "pages", "total", "version")

    def __init__(
        self,
        version: str,
        total: int,
        has_more: bool,
        anchor_found: bool,
        *,
        ids: list[bytes] | None = None,
        bodies: list[bytes] | None = None,
    ) -> None:
        self.version = version
        self.total = total
        self.has_more = has_more
        self.anchor_found = anchor_found
        #: The pages the messages are in, in order, when they are all of them (else ()).
        self.pages: tuple[bytes, ...] = ()
        self._ids = ids
        self._bodies = bodies

    @classmethod
    def whole(
        cls, version: str, total: int, anchor_found: bool, pages: tuple[bytes, ...]
    ) -> StateBodies:
        """A whole thread's messages: every record of ``pages``, split when asked for."""
        found = cls(version, total, False, anchor_found)
        found.pages = pages
        return found

    @property
    def ids(self) -> list[bytes]:
        """The messages' ids as Redis sent them (UTF-8): decoded only where a message
        is built."""
        if self._ids is None:
            self._split()
        assert self._ids is not None
        return self._ids

    @property
    def bodies(self) -> list[bytes]:
        if self._bodies is None:
            self._split()
        assert self._bodies is not None
        return self._bodies

    def _split(self) -> None:
        ids: list[bytes] = []
        bodies: list[bytes] = []
        for page in self.pages:  # no tuple per record
            split_records(page, ids, bodies)
        self._ids, self._bodies = ids, bodies

    @staticmethod
    def split(page: bytes) -> tuple[list[bytes], list[bytes]]:
        """The ids and bodies of one of ``pages``' records, in order."""
        ids: list[bytes] = []
        bodies: list[bytes] = []
        split_records(page, ids, bodies)
        return ids, bodies

    def decoded(self) -> StatePage:
        """The page with its messages built."""
        messages = [
            decode_stored(b, i.decode()) for i, b in zip(self.ids, self.bodies, strict=True)
        ]
        return StatePage(self.version, self.total, self.has_more, self.anchor_found, messages)


@dataclass(frozen=True, slots=True)
class WholeThread:
    """A whole thread with each message's position (a follower's starting point: the
    change events it applies next name positions, :mod:`threadfold.workers.feed`)."""

    version: str
    positions: list[int]
    ids: list[bytes]
    bodies: list[bytes]


def parse_snapshot(raw: list[Any]) -> WholeThread | None:
    """The answer to ``call(k)`` (a whole thread) with positions; None when never
    written."""
    if not raw:
        return None
    numbered = sorted(zip(map(int, raw[4::2]), raw[5::2], strict=True))
    held = [r for _, page in numbered for r in records(as_bytes(page))]
    return WholeThread(
        text(raw[0]), [r[0] for r in held], [r[1] for r in held], [r[2] for r in held]
    )


def call(k: ThreadKeys, mode: str = "all", anchor: str = "", limit: int = -1) -> Call:
    return Call(SCRIPT, keys_of(Keys, k), Args(mode, anchor, limit, fingerprint(anchor)))


def transaction(k: ThreadKeys) -> list[Command]:
    """A whole thread's read as one transaction (on one server: every key of it is in
    the thread's slot, but a Cluster client would redirect its commands one by one)."""
    return [
        Command((b"MULTI",), k.meta),
        Command((b"EXISTS", k.meta), k.meta),
        Command((b"HMGET", k.meta, b"c", b"m"), k.meta),
        Command((b"HGETALL", k.pages), k.meta),
        Command((b"EXEC",), k.meta),
    ]


def from_transaction(replies: list[Any]) -> list[Any] | None:
    """The transaction's replies (MULTI's, three QUEUED, EXEC's) in the script's shape;
    None when Redis refused it: a server over its maxmemory refuses every command queued
    in a MULTI, reads too, where it runs a read-only script."""
    executed = replies[-1]
    if isinstance(executed, Exception):
        return None
    exists, (cursor, total), pages = executed
    if not exists:  # never written, or deleted
        return []
    if isinstance(pages, dict):  # RESP3 answers a hash as a map
        pages = [x for pair in pages.items() for x in pair]
    return [cursor or b"0-0", total or 0, 1, -1, *pages]


def exchange(
    client: SyncRedis, k: ThreadKeys, mode: str = "all", anchor: str = "", limit: int = -1
) -> list[Any]:
    """READ_STATE's answer: a transaction for a whole thread on one server, else the
    script."""
    if mode == "all" and limit < 0 and isinstance(client, redis.Redis):
        read = from_transaction(run_many(client, transaction(k)))
        if read is not None:
            return read
    raw: list[Any] = run(client, call(k, mode, anchor, limit))
    return raw


async def aexchange(
    client: AsyncRedis, k: ThreadKeys, mode: str = "all", anchor: str = "", limit: int = -1
) -> list[Any]:
    """The asyncio twin of :func:`exchange`."""
    if mode == "all" and limit < 0 and isinstance(client, aioredis.Redis):
        read = from_transaction(await arun_items(client, transaction(k)))
        if read is not None:
            return read
    raw: list[Any] = await arun(client, call(k, mode, anchor, limit))
    return raw


def parse(raw: list[Any], mode: str = "all", limit: int = -1) -> StatePage | None:
    """The answer to ``call(..., mode, anchor, limit)``; None when never written."""
    found = parse_bodies(raw, mode, limit)
    return found.decoded() if found is not None else None


def parse_bodies(raw: list[Any], mode: str = "all", limit: int = -1) -> StateBodies | None:
    """The records of the pages the script sent, cut to the range it was asked for."""
    if not raw:
        return None
    version, total, found = text(raw[0]), int(raw[1]), bool(int(raw[2]))
    anchor = int(raw[3])
    numbered = sorted(zip(map(int, raw[4::2]), raw[5::2], strict=True))
    if mode == "all" and limit < 0:  # a whole thread: the reads' hot path
        pages = tuple([as_bytes(page) for _, page in numbered])
        return StateBodies.whole(version, total, found, pages)
    held = [r for _, page in numbered for r in records(as_bytes(page))]
    at = next((i for i, r in enumerate(held) if r[0] == anchor), -1)
    held, more = cut(held, at, mode, limit)
    return StateBodies(
        version, total, more, found, ids=[r[1] for r in held], bodies=[r[2] for r in held]
    )


def cut(items: list[T], at: int, mode: str, limit: int) -> tuple[list[T], bool]:
    """The page of ``items`` (in position order) a read asks for, and whether more lie
    past it: all of them, or those after or before the anchor (``items[at]``) in
    ``mode`` 'after' or 'before'; then the ``limit`` nearest the anchor (-1 for all).
    One rule for a live read (the records READ_STATE sent) and a replayed thread."""
    if mode == "after":
        items = items[at + 1 :]
    elif mode == "before":
        items = items[:at]
    more = 0 <= limit < len(items)
    if more:
        items = items[len(items) - limit :] if mode == "before" else items[:limit]
    return items, more

"""LOOKUP (``lookup.lua``): where a thread holds some ids, and the pages holding them."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Final, NamedTuple

from threadfold.core.keys import ThreadKeys
from threadfold.workers.redisio.client import Call, as_bytes, text
from threadfold.workers.storage.contract import keys_of
from threadfold.workers.storage.lua import script
from threadfold.workers.storage.pages import MAX_PAGE_RECORDS, body_at, fingerprint

SCRIPT: Final = script("lookup", "common", "state")


class Keys(NamedTuple):
    meta: str
    pages: str
    index: str  # type: ignore[assignment]  # the key, as ThreadKeys names it (tuple.index unused)


@dataclass(frozen=True, slots=True)
class Found:
    """Where a thread holds some ids: positions by id, the pages holding them."""

    positions: dict[str, int]
    pages: dict[int, bytes]
    per: int

    def bodies(self) -> dict[str, bytes]:
        """The stored bodies by id."""
        found = {}
        for key, position in self.positions.items():
            body = body_at(self.pages.get(position // self.per, b""), position)
            if body is not None:
                found[key] = body
        return found


def nothing() -> Found:
    """What a thread that holds none of the ids gives."""
    return Found({}, {}, MAX_PAGE_RECORDS)


def call(k: ThreadKeys, ids: Sequence[str]) -> Call:
    """ARGV: {id fingerprint}*."""
    args: list[str | bytes] = []
    for ident in ids:
        args += [ident, fingerprint(ident)]
    return Call(SCRIPT, keys_of(Keys, k), args)


def parse(raw: list[Any]) -> Found:
    found, held, per = raw
    positions = {text(found[i]): int(found[i + 1]) for i in range(0, len(found), 2)}
    pages = {int(held[i]): as_bytes(held[i + 1]) for i in range(0, len(held), 2)}
    return Found(positions, pages, int(per))

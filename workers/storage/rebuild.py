"""REBUILD (``rebuild.lua``): replace a thread's state with a replayed one, fenced by
the whole fence like any commit."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Final, NamedTuple

from threadfold.core.keys import ThreadKeys
from threadfold.workers.redisio.client import Call
from threadfold.workers.storage.contract import keys_of
from threadfold.workers.storage.lua import script
from threadfold.workers.storage.pages import fingerprint, record

SCRIPT: Final = script("rebuild", "common", "state")


class Keys(NamedTuple):
    meta: str
    pages: str
    index: str  # type: ignore[assignment]  # the key, as ThreadKeys names it (tuple.index unused)
    feed: str


class Args(NamedTuple):
    """ARGV before the records ({fingerprint position record}*n, ascending)."""

    fence: str
    next_position: int
    n: int


def call(
    k: ThreadKeys,
    fence: str,
    next_position: int,
    messages: Sequence[tuple[str, int, bytes, int]],
) -> Call:
    """``messages``: (id, position, encoded body, token count) in position order."""
    args: list[str | bytes | int] = [*Args(fence, next_position, len(messages))]
    for key, position, body, tokens in messages:
        args += [fingerprint(key), position, record(key, position, body, tokens)]
    return Call(SCRIPT, keys_of(Keys, k), args)


def parse(raw: Any) -> bool:
    """True when done; False when the fence moved meanwhile (replay again)."""
    return bool(int(raw))

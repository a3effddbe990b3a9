"""COPY_SOURCE (``copy_source.lua``): what a copy takes of its source at its current
version, its whole state and its metadata, in one read (so of one version)."""

from __future__ import annotations

from typing import Any, Final, NamedTuple

from threadfold.core.keys import ThreadKeys
from threadfold.workers.redisio.client import Call, as_bytes, text
from threadfold.workers.storage import read_state
from threadfold.workers.storage.contract import keys_of
from threadfold.workers.storage.lua import script
from threadfold.workers.storage.read_state import StatePage

SCRIPT: Final = script("copy_source")


class Keys(NamedTuple):
    meta: str
    pages: str
    metadata: str


def call(k: ThreadKeys) -> Call:
    return Call(SCRIPT, keys_of(Keys, k), [])


def parse(raw: list[Any]) -> tuple[StatePage, dict[str, bytes]] | None:
    """The source's whole state and its metadata (key -> value JSON); None when it was
    never written (or deleted)."""
    if not raw:
        return None
    page = read_state.parse(raw[0])
    assert page is not None  # the script answered a thread
    stored = raw[1]
    return page, {text(stored[i]): as_bytes(stored[i + 1]) for i in range(0, len(stored), 2)}

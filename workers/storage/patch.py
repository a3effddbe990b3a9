"""PATCH (``patch.lua``): a thread's metadata, TTL and pin, changed together or not at
all."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Final, NamedTuple

from threadfold.core.keys import ThreadKeys
from threadfold.core.lifecycle import TTL_DEFAULT, TTL_KEEP
from threadfold.core.metadata import MAX_KEYS, MAX_TOTAL_BYTES
from threadfold.workers.redisio.client import Call, text
from threadfold.workers.storage.contract import keys_of
from threadfold.workers.storage.lua import script

SCRIPT: Final = script("patch", "common", "lifecycle")

#: A TTL change: unchanged, back to the deployment's default, or ms.
KEEP: Final = TTL_KEEP
DEFAULT: Final = TTL_DEFAULT


class Keys(NamedTuple):
    meta: str
    metadata: str
    terms: str
    expiry: str


class Args(NamedTuple):
    """The call's ARGV before the metadata changes (key, value JSON or '' to delete)."""

    ref: str
    ttl: str
    pinned: str
    default_ttl_ms: int
    max_keys: int
    max_bytes: int


@dataclass(frozen=True, slots=True)
class Refused:
    """The change would pass a limit of the thread's metadata: ``limit`` is ``keys`` or
    ``bytes``, ``reached`` what the thread would have held."""

    limit: str
    reached: int


def call(
    k: ThreadKeys,
    ttl: str,
    pinned: str,
    default_ttl_ms: int,
    changes: Sequence[str | bytes],
) -> Call:
    args = Args(k.ref, ttl, pinned, default_ttl_ms, MAX_KEYS, MAX_TOTAL_BYTES)
    return Call(SCRIPT, keys_of(Keys, k), [*args, *changes])


def parse(raw: list[Any]) -> bool | Refused:
    """False when the thread does not exist, True when changed."""
    if not raw:
        return False
    if text(raw[0]) == "refused":
        return Refused(text(raw[1]), int(raw[2]))
    return True

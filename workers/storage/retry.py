"""RETRY (``retry.lua``): an operator lifts a quarantine, optionally skipping the entry
the drain failed on."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Final, NamedTuple

from threadfold.core.keys import ThreadKeys
from threadfold.workers.redisio.client import Call, text
from threadfold.workers.storage.contract import keys_of
from threadfold.workers.storage.lua import script
from threadfold.workers.storage.meta import SKIPPED_KEPT

SCRIPT: Final = script("retry", "common")


class Keys(NamedTuple):
    meta: str
    sched: str
    dirty: str
    quarantine: str
    log: str


class Args(NamedTuple):
    ref: str
    sched_ms: int
    skip: str  # '1' | '0'
    keep: int


@dataclass(frozen=True, slots=True)
class Retried:
    """What a retry did: whether the thread was quarantined, whether this call set its
    wake-up flag (the caller sends the wake-up), the entry it skipped ('' for none),
    when a skip was asked for and none happened, why, and whether a backlog is left."""

    was_quarantined: bool
    woke: bool
    skipped: str
    not_skipped: str
    backlog: bool


def call(k: ThreadKeys, wake_ms: int, skip: bool) -> Call:
    return Call(SCRIPT, keys_of(Keys, k), Args(k.ref, wake_ms, "1" if skip else "0", SKIPPED_KEPT))


def parse(raw: list[Any]) -> Retried | None:
    """None when the thread does not exist (the script then wrote nothing)."""
    if int(raw[0]) < 0:
        return None
    was, woke, skipped, why, backlog = raw
    return Retried(bool(int(was)), bool(int(woke)), text(skipped), text(why), bool(int(backlog)))

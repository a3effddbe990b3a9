"""CHECKPOINT_REMOVE (``checkpoint_remove.lua``): a thread's checkpoints removed with
their writes, the bucket's index of runs kept exact and the channel values no
checkpoint left names removed: named ones, all but each namespace's latest (LangGraph's
prune ``keep_latest``), those of some runs, or all (prune ``delete``)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Final, Literal, NamedTuple

from threadfold.core.keys import ThreadKeys
from threadfold.workers.redisio.client import Call
from threadfold.workers.storage.checkpoint_put import Keys
from threadfold.workers.storage.contract import keys_of
from threadfold.workers.storage.lua import script

SCRIPT: Final = script("checkpoint_remove", "common", "lifecycle", "checkpoint")

Mode = Literal["fields", "latest", "runs", "all"]

__all__ = ["SCRIPT", "Args", "Keys", "call", "parse"]


class Args(NamedTuple):
    ref: str
    mode: str


def call(k: ThreadKeys, mode: Mode, names: Sequence[str] = ()) -> Call:
    return Call(SCRIPT, keys_of(Keys, k), [*Args(k.ref, mode), *names])


def parse(raw: Any) -> int:
    return int(raw)

"""CHECKPOINT_WRITES (``checkpoint_writes.lua``): a task's pending writes on a
checkpoint, each kept once per (task, index) but LangGraph's special ones, which
replace. A write's field is ``<checkpoint field>\\n<task_id>\\n<idx>``; its value the
channel, the serialized value and the task's path, as msgpack."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Final, NamedTuple

import msgspec

from threadfold.core.checkpoints import Write
from threadfold.core.keys import ThreadKeys
from threadfold.workers.redisio.client import Call
from threadfold.workers.storage.checkpoint_put import field_of
from threadfold.workers.storage.contract import keys_of
from threadfold.workers.storage.lua import script

SCRIPT: Final = script("checkpoint_writes")

_encode = msgspec.msgpack.Encoder().encode


class Keys(NamedTuple):
    checkpoint_writes: str
    checkpoint_write_order: str


class Args(NamedTuple):
    field: str


def call(k: ThreadKeys, ns: str, checkpoint_id: str, writes: Sequence[Write]) -> Call:
    args: list[Any] = [*Args(field_of(ns, checkpoint_id))]
    for w in writes:
        args += [w.task_id, w.idx, _encode((w.channel, w.value, w.task_path))]
    return Call(SCRIPT, keys_of(Keys, k), args)

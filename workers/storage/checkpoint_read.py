"""CHECKPOINT_READ (``checkpoint_read.lua``): checkpoints read whole, each with its
channel values and pending writes: the latest of a namespace, named ones, a page of a
namespace newest first, or every checkpoint's field."""

from __future__ import annotations

from typing import Any, Final, NamedTuple

import msgspec

from threadfold.core.checkpoints import Blob, Stored, Typed, Write
from threadfold.core.keys import ThreadKeys
from threadfold.workers.redisio.client import Call, text
from threadfold.workers.storage.checkpoint_put import Keys
from threadfold.workers.storage.contract import keys_of
from threadfold.workers.storage.lua import script

SCRIPT: Final = script("checkpoint_read", "common", "lifecycle", "checkpoint")

__all__ = [
    "SCRIPT", "Args", "Full", "Keys", "fields", "latest", "page", "parse", "parse_fields",
    "parse_full", "parse_version", "pick", "version",
]

_body = msgspec.msgpack.Decoder(tuple[Typed, Typed, bytes])
_blob = msgspec.msgpack.Decoder(Typed)
_write = msgspec.msgpack.Decoder(tuple[str, Typed, str])


class Args(NamedTuple):
    mode: str


def latest(k: ThreadKeys, ns: str) -> Call:
    return Call(SCRIPT, keys_of(Keys, k), [*Args("latest"), ns])


def pick(k: ThreadKeys, fields: list[str]) -> Call:
    return Call(SCRIPT, keys_of(Keys, k), [*Args("pick"), *fields])


def page(k: ThreadKeys, ns: str, before: str | None, count: int) -> Call:
    return Call(SCRIPT, keys_of(Keys, k), [*Args("page"), ns, before or "", count])


def fields(k: ThreadKeys) -> Call:
    return Call(SCRIPT, keys_of(Keys, k), [*Args("fields")])


def version(k: ThreadKeys, field: str) -> Call:
    return Call(SCRIPT, keys_of(Keys, k), [*Args("version"), field])


def parse_version(raw: Any) -> str | None:
    return None if raw is None else text(raw)


def parse_fields(raw: list[Any]) -> list[str]:
    return [text(f) for f in raw]


def parse(raw: list[Any]) -> list[Stored]:
    """The checkpoints an answer holds, in its order."""
    return [_stored(one) for one in raw]


class Full(NamedTuple):
    """A checkpoint with what its record holds besides: its run, its metadata's JSON."""

    stored: Stored
    run: str | None
    filterable: bytes


def parse_full(raw: list[Any]) -> list[Full]:
    out = []
    for one in raw:
        head, _, body = one[1].partition(b"\0")
        run = text(head.split(b"\x1e")[1]) or None
        out.append(Full(_stored(one), run, _body.decode(body)[2]))
    return out


def _stored(one: list[Any]) -> Stored:
    """One checkpoint of ``read_one``'s answer: field, record, version, channel values,
    write fields, writes."""
    field, rec, version, values, members, writes = one
    ns, _, checkpoint_id = text(field).rpartition("\n")
    head, _, body = rec.partition(b"\0")
    parent, _run, names = head.split(b"\x1e")
    checkpoint, metadata, _json = _body.decode(body)
    blobs = []
    for name, value in zip(names.split(b"\x1f") if names else [], values, strict=True):
        if value is None:  # removed by a prune under a checkpoint that names it: never
            continue
        _, channel, v = text(name).split("\n")[-3:]
        blobs.append(Blob(channel, v, _blob.decode(value) if value else None))
    pending = []
    for member, value in zip(members, writes, strict=True):
        if value is None:
            continue
        _, task_id, idx = text(member).rsplit("\n", 2)
        channel, typed, path = _write.decode(value)
        pending.append(Write(task_id, int(idx), channel, typed, path))
    return Stored(
        ns, checkpoint_id, checkpoint, metadata, text(parent) or None, blobs, pending,
        text(version) or None,
    )


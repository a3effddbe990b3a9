"""CHECKPOINT_PUT (``checkpoint_put.lua``): a LangGraph checkpoint stored with the
thread, and the record format the checkpoint scripts share.

A record is a header the scripts read (the parent's id, the run's id, the fields of
the channel values the checkpoint names; text, since Redis's cmsgpack cannot read
msgpack's bin type), a NUL, and the saver's values as msgpack (:mod:`.checkpoint_read`
decodes them). A checkpoint's field is ``<checkpoint_ns>\\n<checkpoint_id>``; a channel
value's ``<checkpoint_ns>\\n<channel>\\n<version>``: a value is stored once per version
and shared by the checkpoints that name it, as LangGraph's own savers do.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Final, NamedTuple

import msgspec

from threadfold.core.checkpoints import Blob, Typed
from threadfold.core.keys import ThreadKeys
from threadfold.workers.redisio.client import Call, text
from threadfold.workers.storage.contract import keys_of
from threadfold.workers.storage.lua import script

SCRIPT: Final = script("checkpoint_put", "common", "lifecycle", "checkpoint")

_HEADER_PARTS: Final = b"\x1e"
_HEADER_FIELDS: Final = b"\x1f"
_encode = msgspec.msgpack.Encoder().encode


class Keys(NamedTuple):
    checkpoints: str
    checkpoint_order: str
    checkpoint_versions: str
    checkpoint_blobs: str
    checkpoint_writes: str
    checkpoint_write_order: str
    checkpoint_runs: str
    run_index: str


class Args(NamedTuple):
    ref: str
    field: str
    record: bytes
    version: str
    parent: str
    run: str


def field_of(ns: str, checkpoint_id: str) -> str:
    """A checkpoint's field in the thread's hashes and order."""
    return f"{ns}\n{checkpoint_id}"


def blob_field(ns: str, channel: str, version: str) -> str:
    return f"{ns}\n{channel}\n{version}"


def record(
    parent: str | None,
    run: str | None,
    blob_fields: Sequence[str],
    values: tuple[Typed, Typed, bytes],
) -> bytes:
    """A checkpoint's record: its header, then (checkpoint, metadata, metadata JSON)."""
    header = _HEADER_PARTS.join(
        [(parent or "").encode(), (run or "").encode(),
         _HEADER_FIELDS.join(f.encode() for f in blob_fields)]
    )
    return header + b"\0" + _encode(values)


def blob_value(blob: Blob) -> bytes:
    """A channel value as stored (b"" for an empty channel)."""
    return b"" if blob.value is None else _encode(blob.value)


def call(  # noqa: PLR0913  # a checkpoint's parts, by name
    k: ThreadKeys,
    ns: str,
    checkpoint_id: str,
    rec: bytes,
    *,
    version: str | None,
    parent: str | None,
    run: str | None,
    blobs: Sequence[Blob],
) -> Call:
    parent_field = field_of(ns, parent) if parent else ""
    args = Args(k.ref, field_of(ns, checkpoint_id), rec, version or "", parent_field, run or "")
    pairs: list[Any] = []
    for b in blobs:
        pairs += [blob_field(ns, b.channel, b.version), blob_value(b)]
    return Call(SCRIPT, keys_of(Keys, k), [*args, *pairs])


def parse(raw: Any) -> str | None:
    """The thread's version recorded for the checkpoint, if any."""
    found = text(raw)
    return found or None


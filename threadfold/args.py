"""The deltas of ``append_many`` in every form a client takes them, checked the same way
by every kind of client before any I/O (the other arguments' checks are the thread
service's, :mod:`threadfold.workers.threads.query`)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any, NamedTuple

from threadfold.core.errors import InvalidInput
from threadfold.types import DeltaLike


class DeltaArgs(NamedTuple):
    """One delta of ``append_many``, whatever form it was given in."""

    thread_id: str
    messages: Sequence[Any]
    delta_id: str | None
    #: The metadata of the thread this delta creates, if it does (a mapping's key, an
    #: object's attribute; a tuple carries none).
    metadata: Mapping[str, Any] | None = None


def deltas(items: Iterable[DeltaLike]) -> list[DeltaArgs]:
    """The deltas of ``append_many``: pairs ``(thread_id, messages)``, triples with a
    ``delta_id``, mappings with those keys, or objects with those attributes."""
    if isinstance(items, str | bytes | Mapping) or not isinstance(items, Iterable):
        raise InvalidInput(
            f"deltas: expected an iterable of deltas, got {type(items).__name__}", field="deltas"
        )
    return [_one(item, i) for i, item in enumerate(items)]


def _one(item: object, i: int) -> DeltaArgs:
    where = f"deltas[{i}]"
    if isinstance(item, tuple) and len(item) in (2, 3):
        return DeltaArgs(item[0], item[1], item[2] if len(item) == 3 else None)
    if isinstance(item, Mapping):
        if "thread_id" not in item or "messages" not in item:
            missing = "thread_id" if "thread_id" not in item else "messages"
            raise InvalidInput(
                f"{where}.{missing}: required field is missing", field=f"{where}.{missing}"
            )
        return DeltaArgs(
            item["thread_id"], item["messages"], item.get("delta_id"), item.get("metadata")
        )
    if hasattr(item, "thread_id") and hasattr(item, "messages"):
        return DeltaArgs(
            item.thread_id,
            item.messages,
            getattr(item, "delta_id", None),
            getattr(item, "metadata", None),
        )
    raise InvalidInput(
        f"{where}: expected (thread_id, messages), (thread_id, messages, delta_id), a mapping "
        f"or an object with thread_id and messages, got {type(item).__name__}",
        field=where,
    )

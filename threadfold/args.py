"""The deltas of ``append_many`` in every form a client takes them, checked the same way
by every kind of client before any I/O (the other arguments' checks are the thread
service's, :mod:`threadfold.workers.threads.query`)."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any, Protocol, TypeAlias

from threadfold.core.errors import InvalidInput
from threadfold.workers.threads.operations import Delta


class HasDelta(Protocol):
    """A delta given as an object (:class:`threadfold.Delta`, a dataclass of yours); its
    attributes ``delta_id`` and ``metadata`` are used when present."""

    @property
    def thread_id(self) -> str: ...

    @property
    def messages(self) -> Sequence[Any]: ...


#: One delta of ``append_many``: ``(thread_id, messages)``, ``(thread_id, messages,
#: delta_id)``, a mapping with those keys, or an object with those attributes.
DeltaLike: TypeAlias = (
    tuple[str, Sequence[Any]] | tuple[str, Sequence[Any], str | None] | Mapping[str, Any] | HasDelta
)


def deltas(items: Iterable[DeltaLike]) -> list[Delta]:
    """The deltas of ``append_many``: pairs ``(thread_id, messages)``, triples with a
    ``delta_id``, mappings with those keys, or objects with those attributes."""
    if isinstance(items, str | bytes | Mapping) or not isinstance(items, Iterable):
        raise InvalidInput(
            f"deltas: expected an iterable of deltas, got {type(items).__name__}", field="deltas"
        )
    return [_one(item, i) for i, item in enumerate(items)]


def _one(item: object, i: int) -> Delta:
    where = f"deltas[{i}]"
    if isinstance(item, Delta):
        return item
    if isinstance(item, tuple) and len(item) in (2, 3):
        return Delta(
            thread_id=item[0], messages=item[1], delta_id=item[2] if len(item) == 3 else None
        )
    if isinstance(item, Mapping):
        if "thread_id" not in item or "messages" not in item:
            missing = "thread_id" if "thread_id" not in item else "messages"
            raise InvalidInput(
                f"{where}.{missing}: required field is missing", field=f"{where}.{missing}"
            )
        return Delta(
            thread_id=item["thread_id"],
            messages=item["messages"],
            delta_id=item.get("delta_id"),
            metadata=item.get("metadata"),
        )
    if hasattr(item, "thread_id") and hasattr(item, "messages"):
        return Delta(
            thread_id=item.thread_id,
            messages=item.messages,
            delta_id=getattr(item, "delta_id", None),
            metadata=getattr(item, "metadata", None),
        )
    raise InvalidInput(
        f"{where}: expected (thread_id, messages), (thread_id, messages, delta_id), a mapping "
        f"or an object with thread_id and messages, got {type(item).__name__}",
        field=where,
    )


def bulks(items: Iterable[Iterable[DeltaLike]]) -> Iterator[list[Delta]]:
    """The bulks of ``append_stream``, each as ``append_many`` takes its deltas, checked
    as they are reached (a stream may be longer than memory); a bad one is refused as
    ``bulks[k]...``."""
    if isinstance(items, str | bytes | Mapping) or not isinstance(items, Iterable):
        raise InvalidInput(
            f"bulks: expected an iterable of bulks, got {type(items).__name__}", field="bulks"
        )
    for k, bulk in enumerate(items):
        try:
            yield deltas(bulk)
        except InvalidInput as exc:
            raise exc.under(f"bulks[{k}].") from None

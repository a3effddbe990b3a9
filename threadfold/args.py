"""The arguments every kind of client checks the same way, before any I/O."""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, NamedTuple

from threadfold.core.keys import InvalidName, check_name
from threadfold.core.versions import InvalidVersion, parse_version
from threadfold.errors import InvalidInput
from threadfold.types import DeltaLike


class DeltaArgs(NamedTuple):
    """One delta of ``append_many``, whatever form it was given in."""

    thread_id: str
    messages: Sequence[Any]
    delta_id: str | None


def thread_id(value: str) -> str:
    """``value`` if it is a valid thread id; else the API's answer to it (422, the field
    ``thread_id``). Checked here so that an HTTP client never puts a thread id that is
    not one into a URL path (``a/b`` would reach another route)."""
    try:
        return check_name(value, "thread id")
    except InvalidName as exc:
        raise InvalidInput(str(exc), status=422, code="invalid", field="thread_id") from exc


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
        return DeltaArgs(item["thread_id"], item["messages"], item.get("delta_id"))
    if hasattr(item, "thread_id") and hasattr(item, "messages"):
        return DeltaArgs(item.thread_id, item.messages, getattr(item, "delta_id", None))
    raise InvalidInput(
        f"{where}: expected (thread_id, messages), (thread_id, messages, delta_id), a mapping "
        f"or an object with thread_id and messages, got {type(item).__name__}",
        field=where,
    )


def version(value: str, field: str = "version") -> str:
    """``value`` if it is a version (``<ms>-<seq>``); else refused as the API refuses a
    malformed ``min_version`` (400)."""
    try:
        parse_version(value)
    except InvalidVersion as exc:
        raise InvalidInput(f"{field}: {exc}", status=400, code="bad_request", field=field) from exc
    return value


def timeout(value: float, field: str = "timeout") -> float:
    """``value`` if it is a number of seconds >= 0."""
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0 <= value < math.inf:
        raise InvalidInput(
            f"{field}: expected a number of seconds >= 0, got {value!r}",
            status=400,
            code="bad_request",
            field=field,
        )
    return float(value)


def format_of(value: object) -> str:
    """``value`` if it is a format a read serves; else refused as the API refuses it."""
    if value not in ("langchain", "openai"):
        raise InvalidInput(
            "format: expected 'langchain' or 'openai'",
            status=400,
            code="bad_request",
            field="format",
        )
    return str(value)

"""Messages to LangChain's flat dict form (what ``model_dump()`` gives).

Keys in LangChain's order: the common fields, the type's own fields, then the extra
fields. ``messages_from_dict``-style readers and ``AnyMessage`` validation load it back
exactly. Nested containers are shared with the (frozen) message, not copied: callers
serialise the result, they do not edit it.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Final

from threadfold.core.messages import MESSAGE_CLASSES, TYPE_OF, BaseMessage

_HEAD: Final = ("content", "additional_kwargs", "response_metadata")
_COMMON: Final = frozenset({*_HEAD, "name", "id", "extra"})


def _own_fields(cls: type[BaseMessage]) -> tuple[str, ...]:
    """The type's own fields in LangChain's order (msgspec lists subclass fields first)."""
    own = [f for f in cls.__struct_fields__ if f not in _COMMON]
    order = (
        "tool_calls",
        "invalid_tool_calls",
        "usage_metadata",
        "tool_call_chunks",
        "chunk_position",
        "tool_call_id",
        "artifact",
        "status",
        "role",
    )
    return tuple(sorted(own, key=order.index))


_OWN: Final = {cls: _own_fields(cls) for cls in MESSAGE_CLASSES}


def dump_message(message: BaseMessage) -> dict[str, Any]:
    """One message as LangChain's ``model_dump()`` would give it."""
    cls = type(message)
    out: dict[str, Any] = {
        "content": message.content,
        "additional_kwargs": message.additional_kwargs,
        "response_metadata": message.response_metadata,
        "type": TYPE_OF[cls],
        "name": message.name,
        "id": message.id,
    }
    for field in _OWN[cls]:
        out[field] = getattr(message, field)
    if message.extra:
        out.update(message.extra)
    return out


def dump_messages(messages: Iterable[BaseMessage]) -> list[dict[str, Any]]:
    """Every message as :func:`dump_message` gives it."""
    return [dump_message(m) for m in messages]
